"""What every request meets: answers that no cache keeps, errors in one line with no
backend text, JSON changes by their exact media type, and WebSockets behind the same sign-in."""

from __future__ import annotations

import json

import pytest
from starlette.websockets import WebSocket
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.workers.dashboard.client import FORM, JSON, TOKEN, Http
from workers.dashboard.auth import COOKIE


def _one_line_error(body: bytes) -> str:
    assert body.count(b"\n") == 0, body
    return json.loads(body)["error"]


async def test_pages_and_answers_are_not_stored_static_files_may_be(open_dashboard):
    http = Http(open_dashboard)
    for path in ("/", "/api/sessions", "/benchmarks", "/api/sessions/no-such-session"):
        _, headers, _ = await http.get(path)
        assert headers["cache-control"] == "no-store", path
    _, headers, _ = await http.get("/static/dashboard.css")
    assert "no-store" not in headers.get("cache-control", "")


async def test_a_nul_filter_is_refused_in_one_line_naming_it(open_dashboard):
    status, _, body = await Http(open_dashboard).get("/api/sessions?model=%00")
    assert status == 400
    error = _one_line_error(body)
    assert error.startswith("model:"), error
    for backend in ("Temporal", "sql", "SQL", "invalid query", "\\x00", "\x00"):
        assert backend not in error, error


async def test_errors_are_one_line_without_backend_text(open_dashboard):
    http = Http(open_dashboard)
    status, _, body = await http.post(
        "/api/sessions/no-such-session/abort", b'{"reason": "x"}', **JSON
    )
    assert status == 409
    error = _one_line_error(body)
    assert "no-such-session" in error and "workflow not found" not in error, error
    status, _, body = await http.get("/benchmarks/compare?a=x")
    assert status == 400 and _one_line_error(body).startswith("b:")
    status, _, body = await http.get("/api/sessions/no-such-session")
    assert status == 404 and "no-such-session" in _one_line_error(body)


@pytest.mark.parametrize(
    "content_type", ["application/jsonp", "application/json-patch+json", "text/plain"]
)
async def test_only_the_json_media_type_may_change_anything(open_dashboard, content_type):
    status, _, body = await Http(open_dashboard).post(
        "/api/sessions/x/abort", b"{}", **{"Content-Type": content_type}
    )
    assert status == 403 and b"application/json" in body


async def test_json_with_a_charset_is_json(open_dashboard):
    status, _, _ = await Http(open_dashboard).post(
        "/api/sessions/no-such-session/abort",
        b"{}",
        **{"Content-Type": "application/json; charset=utf-8"},
    )
    assert status == 409


async def test_a_websocket_without_the_cookie_is_refused(token_served):
    """The dashboard has no WebSocket route of its own: one is added here, so that the guard,
    not a missing route, is what refuses."""

    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text(await websocket.receive_text())
        await websocket.close()

    token_served.app.add_api_websocket_route("/ws-test", echo)
    ws = token_served.url.replace("http://", "ws://") + "/ws-test"
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws, open_timeout=10):
            pass
    assert refused.value.response.status_code in (401, 403)

    http = Http(token_served.url)
    status, _, _ = await http.post("/login", f"token={TOKEN}&next=/".encode(), **FORM)
    assert status == 303
    with pytest.raises(InvalidStatus):  # signed in, but another site's page opened it
        async with connect(
            ws,
            additional_headers={"Cookie": f"{COOKIE}={http.cookie()}"},
            origin="http://evil.example",  # type: ignore[arg-type]
            open_timeout=10,
        ):
            pass
    async with connect(
        ws, additional_headers={"Cookie": f"{COOKIE}={http.cookie()}"}, open_timeout=10
    ) as socket:
        await socket.send("hello")
        assert await socket.recv() == "hello"
