"""The dashboard's web app (FastAPI): pages, the JSON they poll, artifact streaming and the
steering buttons.

Pages are rendered on the server (Jinja2); `static/dashboard.js` polls the JSON routes and
swaps in the parts of a page that changed, so a running session's page stays live while a
video in it keeps playing. Charts are drawn by Plotly (its bundle is served from the installed
`plotly` package: nothing is fetched at run time).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import jinja2
import structlog
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    Response,
    StreamingResponse,
)
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import escape
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.artifacts import ArtifactStore, ObjectTooLarge
from workers.cli import sessions as steering
from workers.cli.render import training_now
from workers.dashboard import answers, artifacts, benchmarks, formula, login
from workers.dashboard.answers import JSON, error
from workers.dashboard.auth import Gate
from workers.dashboard.guard import Guard
from workers.dashboard.sessions import (
    FILTERS,
    FilterError,
    PromptCache,
    SessionReader,
    list_session_page,
    page_size,
)
from workers.dashboard.text import finalize, one_line, visible
from workers.settings import Settings
from workflows.contracts.judging import CriterionScore
from workflows.contracts.session import ENV_IDS, Stage
from workflows.verdict import is_met, record_verdict

HERE = Path(__file__).parent
STAGES = list(Stage.__args__)  # type: ignore[attr-defined]
# Ids of sessions and benchmarks: what the CLI and the benchmark generate, nothing that could
# climb out of their S3 folder.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")
FILTER_NAMES = tuple(FILTERS)
# What the list page's address may hold: its filters, the page's cursor and size.
_LIST_PARAMS = (*FILTER_NAMES, "page", "limit")
_CHUNK = 1 << 20  # bytes per ranged read of a video
# What an artifact may be served as, by its name's ending: media and data a browser shows but
# never runs. Anything else (an .html, .js or .svg planted in the bucket would run as script on
# this origin) is a download.
_SAFE_MEDIA = {
    ".mp4": "video/mp4",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".json": "application/json",
    ".jsonl": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".py": "text/plain; charset=utf-8",  # reward code, its hidden characters escaped
    ".md": "text/plain; charset=utf-8",
    ".log": "text/plain; charset=utf-8",
}
# On every artifact, whatever its type: no sniffing it into a page, and nothing in it runs or
# loads if a browser opens it as one all the same.
_ARTIFACT_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": "private, max-age=60",
}


def plotly_bundle() -> Path:
    """plotly.min.js as the installed `plotly` package ships it."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def artifact_url(session_id: str, key: str) -> str:
    """The dashboard's address of one of a session's artifacts (an S3 key under its folder)."""
    prefix = f"sessions/{session_id}/"
    return f"/artifacts/{quote(session_id)}/{quote(key.removeprefix(prefix))}"


def artifact_headers(path: str) -> dict[str, str]:
    """The Content-Type and safety headers of an artifact, from the allow-list only."""
    media = _SAFE_MEDIA.get(PurePosixPath(path).suffix.lower())
    if media is None:
        return {
            **_ARTIFACT_HEADERS,
            "Content-Type": "application/octet-stream",
            "Content-Disposition": "attachment",
        }
    return {**_ARTIFACT_HEADERS, "Content-Type": media}


def _check_id(value: str) -> str:
    if not _ID.match(value):
        raise HTTPException(404, "no such session")
    return value


def _version(parts: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def criterion_met(c: CriterionScore | dict[str, Any]) -> bool:
    """Whether a judged criterion is met (a judgment.json's criterion is read as one)."""
    return is_met(c if isinstance(c, CriterionScore) else CriterionScore.model_validate(c))


def create_app(client: Client, store: ArtifactStore, settings: Settings, gate: Gate) -> FastAPI:
    """The dashboard for one Temporal client and one bucket."""
    app = FastAPI(
        title="policyforge dashboard",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        default_response_class=JSON,
    )
    app.add_middleware(Guard, gate=gate)
    app.state.gate = gate  # a new token (Gate.change_token) ends every sign-in
    answers.install(app)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    # Every `{{ value }}` is finalized: generated text shows its hidden characters as escapes.
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, finalize=finalize
    )
    templates = Jinja2Templates(env=environment)
    templates.env.filters["mathml"] = formula.mathml
    templates.env.globals.update(
        web_ui=settings.ui_link,
        namespace=client.namespace,
        stages=STAGES,
        env_ids=ENV_IDS,
        signed_in_with_token=gate.needs_sign_in,
        artifact_url=artifact_url,
        verdict=record_verdict,
        is_met=criterion_met,
        training_now=training_now,
    )
    reader = SessionReader(client)
    prompts = PromptCache()

    def page(request: Request, name: str, **context: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context)

    async def blocking(fn: Any, *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    # --- health, Plotly, sign-in ------------------------------------------------------------

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/vendor/plotly.min.js")
    async def plotly_js() -> FileResponse:
        return FileResponse(plotly_bundle(), media_type="text/javascript")

    login.add_routes(app, gate, page)

    # --- sessions -----------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse)
    async def session_list(request: Request) -> HTMLResponse:
        filters = {k: request.query_params.get(k, "") for k in _LIST_PARAMS}
        return page(request, "sessions.html", filters=filters)

    @app.get("/api/sessions")
    async def api_sessions(request: Request) -> JSON:
        """One page of the list (`limit` rows, `page` the cursor the page before gave)."""
        query = request.query_params
        filters = {k: v for k, v in query.items() if k in FILTER_NAMES}
        try:
            size = page_size(query.get("limit", ""))
            listed = await list_session_page(client, filters, prompts, size, query.get("page", ""))
        except FilterError as exc:
            return error(400, exc)
        except RPCError as exc:
            return error(502, answers.temporal_failed(exc, "the session list"))
        rows = [r.as_json() for r in listed.rows]
        return JSON({"sessions": rows, "next_page": listed.next_page})

    async def session_parts(request: Request, session_id: str) -> dict[str, Any]:
        try:
            view = await reader.view(session_id)
        except LookupError as exc:
            raise HTTPException(404, str(exc)) from None
        status, state = view.status, view.state
        failure = await reader.failure(session_id) if state == "Failed" else None
        views = await blocking(artifacts.session_iterations, store, status) if status else []
        context = {
            "session_id": session_id,
            "status": status,
            "state": state,
            "view": view,
            "failure": failure,
            "iterations": views,
        }
        parts = {
            "header": templates.get_template("_session_header.html").render(context),
            "steer": templates.get_template("_session_steer.html").render(context),
        }
        for view in views:
            parts[f"iter-{view['iteration']}"] = _iteration_part(templates, context, view)
        hashes = {name: _version({name: html}) for name, html in parts.items()}
        return {"parts": parts, "hashes": hashes, "version": _version(parts), "state": state}

    @app.get("/sessions/{session_id}", response_class=HTMLResponse)
    async def session_page(request: Request, session_id: str) -> HTMLResponse:
        data = await session_parts(request, _check_id(session_id))
        return page(request, "session.html", session_id=session_id, **data)

    @app.get("/api/sessions/{session_id}/parts")
    async def api_session_parts(request: Request, session_id: str) -> JSON:
        return JSON(await session_parts(request, _check_id(session_id)))

    @app.get("/api/sessions/{session_id}")
    async def api_session(session_id: str) -> JSON:
        try:
            view = await reader.view(_check_id(session_id))
        except LookupError as exc:
            raise HTTPException(404, str(exc)) from None
        return JSON(
            {
                "state": view.state,
                "wall_seconds": view.wall_seconds,
                "live_timesteps": view.live_timesteps,
                "status": view.status.model_dump(mode="json") if view.status else None,
            }
        )

    @app.post("/api/sessions/{session_id}/{action}")
    async def steer(request: Request, session_id: str, action: str) -> JSON:
        _check_id(session_id)
        try:
            body = json.loads(await request.body())
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep
            return error(400, "the body is not JSON")
        if not isinstance(body, dict):
            return error(400, "send a JSON object")
        try:
            answer = await _send(action, session_id, body, client)
        except ValueError as exc:
            return error(400, exc)
        except steering.SteeringRefused as exc:
            return error(409, _refused(action, session_id, exc))
        return JSON({"answer": answer})

    @app.get("/artifacts/{owner}/{path:path}")
    async def artifact(request: Request, owner: str, path: str) -> Response:
        """An artifact of a session (sessions/<id>/...) or a benchmark (benchmarks/<id>/...),
        with byte ranges so that videos seek and play."""
        _check_id(owner)
        if ".." in path.split("/") or path.startswith("/"):
            raise HTTPException(404, "no such artifact")
        root = "benchmarks" if request.query_params.get("of") == "benchmark" else "sessions"
        key = f"{root}/{owner}/{path}"
        size = await blocking(store.size, key)
        if size is None:
            raise HTTPException(404, "no such artifact")
        if path.endswith(".py"):
            # Generated code a person reads in the browser: a direction override in it would
            # show other code than runs (Trojan Source), so hidden characters come as escapes.
            # Escaping needs it whole: read only up to the limit of reward code on the page.
            try:
                data = await blocking(store.get_bytes_at_most, key, artifacts.CODE_LIMIT)
            except ObjectTooLarge as exc:
                return _too_large_to_show(path, exc)
            return Response(visible(data.decode(errors="replace")), headers=artifact_headers(path))
        headers = {**artifact_headers(path), "Accept-Ranges": "bytes"}
        wanted = _byte_range(request.headers.get("range"), size)
        if wanted is None:
            headers["Content-Length"] = str(size)
            return StreamingResponse(_chunks(store, key, size), headers=headers)
        start, end = wanted
        end = min(end, start + _CHUNK * 8 - 1)
        data = await blocking(store.get_range, key, start, end)
        headers["Content-Range"] = f"bytes {start}-{start + len(data) - 1}/{size}"
        return Response(data, status_code=206, headers=headers)

    # --- benchmarks ---------------------------------------------------------------------------

    @app.get("/benchmarks", response_class=HTMLResponse)
    async def benchmark_list(request: Request) -> HTMLResponse:
        rows = await benchmarks.list_benchmarks(client)
        return page(request, "benchmarks.html", rows=rows)

    @app.get("/benchmarks/compare", response_class=HTMLResponse)
    async def benchmark_compare(request: Request, a: str, b: str) -> HTMLResponse:
        left = await benchmarks.read(client, store, _check_id(a))
        right = await benchmarks.read(client, store, _check_id(b))
        if left is None or right is None:
            raise HTTPException(404, "no such benchmark")
        return page(request, "compare.html", a=left, b=right, rows=benchmarks.compare(left, right))

    @app.get("/benchmarks/{benchmark_id}", response_class=HTMLResponse)
    async def benchmark_page(request: Request, benchmark_id: str) -> HTMLResponse:
        data = await benchmarks.read(client, store, _check_id(benchmark_id))
        if data is None:
            raise HTTPException(404, "no such benchmark")
        others = [r for r in await benchmarks.list_benchmarks(client) if r["id"] != benchmark_id]
        return page(request, "benchmark.html", b=data, others=others)

    @app.get("/api/benchmarks/{benchmark_id}")
    async def api_benchmark(benchmark_id: str) -> JSON:
        data = await benchmarks.read(client, store, _check_id(benchmark_id))
        if data is None:
            raise HTTPException(404, "no such benchmark")
        return JSON(data)

    return app


def _iteration_part(
    templates: Jinja2Templates, context: dict[str, Any], view: dict[str, Any]
) -> str:
    """One iteration's part of the page; one that fails to render (a record of a shape no
    check foresaw) becomes one line, and the rest of the page still shows."""
    try:
        return templates.get_template("_iteration.html").render({**context, "it": view})
    except Exception as exc:  # noqa: BLE001 - never a 500 for one iteration's files
        structlog.get_logger().exception("dashboard: an iteration did not render", error=str(exc))
        n = int(view["iteration"])
        why = escape(one_line(f"{type(exc).__name__}: {exc}"))
        return (
            f'<article class="iteration card" id="iteration-{n}"><h2>Iteration {n}</h2>'
            f'<p class="error">This iteration could not be shown: {why}</p></article>'
        )


def _too_large_to_show(path: str, exc: ObjectTooLarge) -> Response:
    """A .py artifact over the limit of code shown: 413 and one plain line, never read."""
    name = one_line(PurePosixPath(path).name)
    text = f"{name} is too large to show here: {artifacts.too_large(exc)} for code.\n"
    headers = {**artifact_headers(path), "Cache-Control": "no-store"}
    return Response(text, status_code=413, headers=headers)


def _refused(action: str, session_id: str, exc: steering.SteeringRefused) -> str:
    """Why a steering request was refused, without Temporal's own text: the session's
    validator speaks for itself, a failed call to Temporal is named and logged."""
    cause = exc.__context__
    if not isinstance(cause, RPCError):
        return str(exc)
    if cause.status == RPCStatusCode.NOT_FOUND:
        return f"{action}: no session {session_id!r} is running"
    return answers.temporal_failed(cause, action)


async def _send(action: str, session_id: str, body: dict[str, Any], client: Client) -> str:
    """The update a steering button sends: the same as the CLI's command of that name."""
    if action == "approve":
        return await steering.approve(
            session_id,
            reject=not bool(body.get("approve", True)),
            note=str(body.get("note", "")),
            client=client,
        )
    if action == "feedback":
        text = str(body.get("text", "")).strip()
        if not text:
            raise ValueError("text: write the feedback for the next iteration")
        return await steering.give_feedback(session_id, text, client=client)
    if action == "abort":
        return await steering.abort(session_id, str(body.get("reason", "")), client=client)
    if action == "extend":
        iterations = body.get("iterations")
        if not isinstance(iterations, int) or isinstance(iterations, bool):
            raise ValueError("iterations: a whole number of iterations to add")
        return await steering.extend(session_id, iterations, client=client)
    raise ValueError(f"{action}: unknown action; use approve, feedback, abort or extend")


async def _chunks(store: ArtifactStore, key: str, size: int) -> AsyncIterator[bytes]:
    """A whole object, read a chunk at a time."""
    for start in range(0, size, _CHUNK):
        yield await asyncio.to_thread(store.get_range, key, start, min(start + _CHUNK, size) - 1)


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The first range of a `Range: bytes=a-b` header (None: the whole file)."""
    if not header or not header.startswith("bytes=") or size == 0:
        return None
    first = header[6:].split(",", 1)[0].strip()
    start_s, _, end_s = first.partition("-")
    try:
        if start_s == "":
            start = max(size - int(end_s), 0)
            end = size - 1
        else:
            start = int(start_s)
            end = int(end_s) if end_s else size - 1
    except ValueError:
        return None
    if start >= size or end < start:
        return None
    return start, min(end, size - 1)
