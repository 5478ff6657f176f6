"""What the dashboard reads from Temporal: the sessions (visibility list, filtered by the
search attributes) and one session's status (its `status` query).

A closed session's status never changes, so it is kept once read; a running one is asked
again at every look, which is what makes the pages live.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionStatus,
)
from temporalio.common import SearchAttributeKey

from workers.cli.session_state import training_timesteps, waiting_for_worker
from workflows import search
from workflows.contracts.session import ENV_IDS, SessionStatus
from workflows.contracts.shown import shown

# Filters a person picks on the list page: query parameter -> search attribute.
FILTERS: dict[str, SearchAttributeKey[Any]] = {
    "stage": search.STAGE,
    "env": search.ENV,
    "passed": search.PASSED,
    "model": search.MODEL,
}
_QUERY_TIMEOUT = timedelta(seconds=5)
_LIST_QUERY_TIMEOUT = timedelta(seconds=2)  # a list row's prompt: the list waits on it
_ASK_AGAIN_S = 60.0  # before asking an unanswering session its prompt again
MAX_FILTER_CHARS = 200
PAGE_SIZE = 50  # sessions on one page of the list
MAX_PAGE_SIZE = 200
_MAX_CURSOR_CHARS = 4096  # a page cursor is Temporal's page token, base64: a few hundred bytes
_CURSOR = re.compile(r"(?:[A-Za-z0-9_-]{4})+(?:[A-Za-z0-9_-]{2}==|[A-Za-z0-9_-]{3}=)?")
_CURSOR_KEY = secrets.token_bytes(32)  # signs the cursors this process gives out


class FilterError(ValueError):
    """A filter value the list cannot take; the message names it and what to use."""


def _quote(value: str) -> str:
    """A value in a visibility query: single-quoted, quotes and backslashes escaped."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def list_query(workflow_type: str, filters: dict[str, str]) -> str:
    """The visibility query for the chosen filters (empty values are no filter)."""
    parts = [f"WorkflowType = {_quote(workflow_type)}"]
    for name, raw in filters.items():
        value = raw.strip()
        if not value:
            continue
        if name not in FILTERS:
            raise FilterError(f"{name}: unknown filter; use one of {', '.join(FILTERS)}")
        # Checked here, not by the visibility store: a NUL cut its SQL short, and its error
        # (the database's own text) reached the page.
        if not value.isprintable() or len(value) > MAX_FILTER_CHARS:
            raise FilterError(
                f"{name}: use printable text of at most {MAX_FILTER_CHARS} characters"
            )
        if name == "passed":
            if value not in ("true", "false"):
                raise FilterError(f"passed: use true or false (got {value!r})")
            parts.append(f"{FILTERS[name].name} = {value}")
            continue
        if name == "env" and value not in ENV_IDS:
            raise FilterError(f"env: unknown environment {value!r}")
        parts.append(f"{FILTERS[name].name} = {_quote(value)}")
    # No ORDER BY: the dev server's SQLite visibility refuses it; rows are sorted here.
    return " AND ".join(parts)


@dataclass
class SessionRow:
    """One line of the session list."""

    session_id: str
    run_id: str
    workflow_status: str  # Running, Completed, Failed, ...
    stage: str | None
    env_id: str | None
    iteration: int | None
    best_score: float | None
    passed: bool | None
    model: str | None
    prompt: str | None
    started: str
    closed: str | None
    parent: str | None

    def as_json(self) -> dict[str, Any]:
        """The row for the list page; text that came from elsewhere (a prompt, a model's name)
        with its hidden characters escaped. Ids stay as they are: links are built from them."""
        return {
            k: shown(v) if isinstance(v, str) and k not in _IDS else v
            for k, v in self.__dict__.items()
        }


_IDS = ("session_id", "run_id")


def _attr(execution: WorkflowExecution, key: Any) -> Any:
    return execution.typed_search_attributes.get(key)


async def list_sessions(
    client: Client, filters: dict[str, str], prompts: PromptCache, limit: int = 200
) -> list[SessionRow]:
    """The newest sessions first, with their search attributes and prompts."""
    executions = [
        e async for e in client.list_workflows(list_query("SessionWorkflow", filters), limit=limit)
    ]
    executions.sort(key=lambda e: e.start_time, reverse=True)
    texts = await asyncio.gather(*(prompts.get(client, e) for e in executions))
    return [_row(e, prompt) for e, prompt in zip(executions, texts, strict=True)]


def _row(execution: WorkflowExecution, prompt: str | None) -> SessionRow:
    """A list row, from what the visibility list returned for the session."""
    best = _attr(execution, search.BEST_SCORE)
    return SessionRow(
        session_id=execution.id,
        run_id=execution.run_id,
        workflow_status=_status_name(execution.status),
        stage=_attr(execution, search.STAGE),
        env_id=_attr(execution, search.ENV),
        iteration=_attr(execution, search.ITERATION),
        best_score=None if best is None or best < 0 else best,
        passed=_attr(execution, search.PASSED),
        model=_attr(execution, search.MODEL),
        prompt=prompt,
        started=execution.start_time.isoformat(timespec="seconds"),
        closed=execution.close_time.isoformat(timespec="seconds") if execution.close_time else None,
        parent=execution.parent_id,
    )


@dataclass
class SessionPage:
    """One page of the session list and the cursor of the next (None: this is the last)."""

    rows: list[SessionRow]
    next_page: str | None


def page_size(raw: str) -> int:
    """The `limit` a request names (empty: the default), checked."""
    if not raw:
        return PAGE_SIZE
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_PAGE_SIZE:
        raise FilterError(f"limit: use a whole number from 1 to {MAX_PAGE_SIZE}")
    return int(raw)


def _signature(query: str, token: bytes) -> str:
    return hmac.new(_CURSOR_KEY, query.encode() + b"\0" + token, "sha256").hexdigest()[:32]


def _token(query: str, cursor: str) -> bytes | None:
    """Temporal's page token from the list's cursor (empty: the first page). Only cursors
    this process gave out for the same filters pass: a forged token sent to Temporal is an
    internal error there, retried for seconds, not a refusal."""
    if not cursor:
        return None
    encoded, _, signature = cursor.partition(".")
    if len(cursor) <= _MAX_CURSOR_CHARS and _CURSOR.fullmatch(encoded):
        token = base64.urlsafe_b64decode(encoded)
        if hmac.compare_digest(signature, _signature(query, token)):
            return token
    raise FilterError("page: not a page of this list; start from the first page")


def _cursor(query: str, token: bytes | None) -> str | None:
    if not token:
        return None
    return base64.urlsafe_b64encode(token).decode("ascii") + "." + _signature(query, token)


async def list_session_page(
    client: Client,
    filters: dict[str, str],
    prompts: PromptCache,
    size: int = PAGE_SIZE,
    cursor: str = "",
) -> SessionPage:
    """One page of sessions in the visibility store's order, which its page token follows:
    running ones first, newest started first, then closed ones, latest closed first (the dev
    server's SQLite takes no ORDER BY). One list call per page, the rows read from what it
    returns (search attributes and memo): nothing asked of each session on every refresh."""
    query = list_query("SessionWorkflow", filters)
    listing = client.list_workflows(query, page_size=size, next_page_token=_token(query, cursor))
    await listing.fetch_next_page()
    executions = list(listing.current_page or [])
    texts = await asyncio.gather(*(prompts.get(client, e) for e in executions))
    rows = [_row(e, prompt) for e, prompt in zip(executions, texts, strict=True)]
    return SessionPage(rows, _cursor(query, listing.next_page_token))


class PromptCache:
    """Each session's prompt, which never changes: from the memo the CLI and the benchmark
    set, else (a session started another way) from its status query; kept once known. A
    session whose query goes unanswered (no worker: a stuck session) is asked again only after
    a while, so that hundreds of them cost each refresh nothing instead of a query's timeout."""

    def __init__(self) -> None:
        self._known: dict[str, str] = {}
        self._unanswered: dict[str, float] = {}  # session id -> when to ask again (monotonic)

    async def get(self, client: Client, execution: WorkflowExecution) -> str | None:
        if execution.id in self._known:
            return self._known[execution.id]
        prompt = await _memo_prompt(execution)
        if prompt is None:
            prompt = await self._ask(client, execution)
        if prompt is not None:
            _remember(self._known, execution.id, prompt)
        return prompt

    async def _ask(self, client: Client, execution: WorkflowExecution) -> str | None:
        from workflows.session import SessionWorkflow

        if self._unanswered.get(execution.id, 0.0) > time.monotonic():
            return None
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        try:
            status = await handle.query(SessionWorkflow.status, rpc_timeout=_LIST_QUERY_TIMEOUT)
        except Exception:  # noqa: BLE001 - no worker answers yet: try again after a while
            _remember(self._unanswered, execution.id, time.monotonic() + _ASK_AGAIN_S)
            return None
        return status.prompt if status else None


async def _memo_prompt(execution: WorkflowExecution) -> str | None:
    """The prompt in the memo the CLI and the benchmark set (None: none, or not text)."""
    try:
        prompt = await execution.memo_value("prompt", None, type_hint=str)
    except Exception:  # noqa: BLE001 - a memo another tool wrote: ask the session
        return None
    return prompt if isinstance(prompt, str) else None


_KEEP = 2000  # entries a cache holds before it forgets its oldest


def _remember(cache: dict[str, Any], key: str, value: Any) -> None:
    """Keep `value`, forgetting the oldest entry when the cache is full (dicts keep order)."""
    cache[key] = value
    if len(cache) > _KEEP:
        del cache[next(iter(cache))]


def _status_name(status: WorkflowExecutionStatus | None) -> str:
    return status.name.replace("_", " ").capitalize() if status else "Unknown"


@dataclass
class SessionView:
    """A session as its page shows it: the status query's answer (None: no worker has
    answered yet), the workflow's state and times, and training's live step count."""

    status: SessionStatus | None
    state: str  # Running, Completed, Failed, ...
    started: datetime | None = None
    closed: datetime | None = None
    live_timesteps: int | None = None

    @property
    def wall_seconds(self) -> float | None:
        if self.started is None:
            return None
        end = self.closed or datetime.now(UTC)
        return (end - self.started).total_seconds()


class SessionReader:
    """Each session's status, closed ones read once."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._closed: dict[str, SessionView] = {}

    async def view(self, session_id: str) -> SessionView:
        """The session as its page shows it; LookupError when there is no such session."""
        from temporalio.service import RPCError, RPCStatusCode

        from workflows.session import SessionWorkflow

        if session_id in self._closed:
            return self._closed[session_id]
        handle = self.client.get_workflow_handle(session_id)
        try:
            described = await handle.describe(rpc_timeout=_QUERY_TIMEOUT)
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise LookupError(f"no session {session_id!r}") from None
            raise
        if described.workflow_type != "SessionWorkflow":
            raise LookupError(f"{session_id!r} is a {described.workflow_type}, not a session")
        view = SessionView(
            None,
            _status_name(described.status),
            described.start_time,
            described.close_time,
            training_timesteps(described),
        )
        try:
            view.status = await handle.query(SessionWorkflow.status, rpc_timeout=_QUERY_TIMEOUT)
        except Exception:  # noqa: BLE001 - no worker yet: the page says so and asks again
            return view
        if described.status != WorkflowExecutionStatus.RUNNING and view.status is not None:
            # A session that continued as new is Running on its latest run: never here.
            _remember(self._closed, session_id, view)
        elif view.status is not None:
            waiting = await waiting_for_worker(self.client, described)
            view.status = view.status.model_copy(update={"waiting": waiting})
        return view

    async def failure(self, session_id: str) -> str | None:
        """Why a session ended without a result, in one line (None: it did not fail)."""
        from temporalio.client import WorkflowFailureError

        from workers.cli.session_state import failure_reason

        handle = self.client.get_workflow_handle(session_id)
        try:
            await asyncio.wait_for(handle.result(follow_runs=True), timeout=5)
        except WorkflowFailureError as exc:
            return failure_reason(exc)
        except Exception:  # noqa: BLE001 - still running or unreachable: nothing to say
            return None
        return None
