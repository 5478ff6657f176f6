"""What every request and every WebSocket meets before the dashboard: the Host check, a bound
on the body, the sign-in, JSON-only changes from this origin, and the headers of every answer.

A plain ASGI middleware rather than Starlette's BaseHTTPMiddleware: that one passes WebSockets
through unchecked and cannot see a body being read. A body is refused from its Content-Length
before any of it is read, and a chunked one when what was read passes the limit; the refusal
closes the connection, so the server reads no more of it either.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import ClientDisconnect
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workers.dashboard.answers import error
from workers.dashboard.auth import Gate
from workers.dashboard.signins import WRONG_TOKEN_WINDOW_S

# The largest body the dashboard takes: a sign-in form, or a steering request with the longest
# feedback (2,000 characters, 12 KB if every one is a JSON \u escape).
MAX_BODY = 16 * 1024
PUBLIC = ("/login", "/healthz")
STATIC = ("/static/", "/vendor/")  # may be cached: the same for everyone, nothing generated
_SAFE_METHODS = ("GET", "HEAD")
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; media-src 'self'; "
        "style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
TOO_LARGE = f"the request body is over {MAX_BODY} bytes, the most this dashboard takes"


class BodyTooLarge(Exception):
    """A request body passed the limit while it was read."""


def too_many_wrong_tokens(why: str = "too many wrong tokens from this address") -> Response:
    """The answer to an attempt past a wrong-token limit (its token is not compared)."""
    return error(
        429, f"{why}: try again in a minute", {"Retry-After": str(int(WRONG_TOKEN_WINDOW_S))}
    )


class Guard:
    """The dashboard's gate as ASGI middleware."""

    def __init__(self, app: ASGIApp, gate: Gate, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.gate = gate
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        send = _with_headers(send, cacheable=str(scope["path"]).startswith(STATIC))
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, _bounded(receive, self.max_body), tracked)
        except BodyTooLarge:
            if started:
                raise
            await _too_large()(scope, receive, send)
        except ClientDisconnect:
            # Gone before its body was in (or closed at its body's deadline): nobody to answer,
            # and nothing to log, or a burst of slow bodies would fill the log.
            pass

    def _refusal(self, scope: Scope) -> Response | None:
        """The answer that refuses this request before the app sees it (None: let it in)."""
        headers = Headers(scope=scope)
        path, method = str(scope["path"]), str(scope["method"])
        if not self.gate.host_allowed(headers):
            return error(421, "this dashboard answers to localhost only")
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return error(400, "Content-Length: not a number of bytes")
            if int(length) > self.max_body:
                return _too_large()
        if path not in PUBLIC and not path.startswith(STATIC):
            access = self.gate.who(scope)
            if access == "blocked":
                return too_many_wrong_tokens()
            if access == "out":
                if path.startswith("/api/") or method not in _SAFE_METHODS:
                    return error(401, "sign in: the dashboard needs its token")
                return RedirectResponse(f"/login?next={quote(path)}", 303)
        if method not in _SAFE_METHODS:
            # A sign-in is a form post, but from this dashboard's own page only: another site's
            # must not spend the browser's wrong tokens (refused before anything is counted).
            if path == "/login":
                refused = self.gate.origin_refused(headers)
            else:
                refused = self.gate.change_allowed(headers)
            if refused:
                return error(403, refused)
        return None

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        if (
            not self.gate.host_allowed(headers)
            or self.gate.origin_refused(headers)
            or self.gate.who(scope) != "in"
        ):
            # Closed before it is accepted: the server answers the handshake with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": "sign in"})
            return
        await self.app(scope, receive, send)


def _too_large() -> Response:
    # Connection: close, so that the server stops reading the rest of the body too.
    return error(413, TOO_LARGE, {"Connection": "close"})


def _bounded(receive: Receive, limit: int) -> Receive:
    """`receive` that raises BodyTooLarge once the body read passes `limit` bytes."""
    taken = 0

    async def bounded() -> Message:
        nonlocal taken
        message = await receive()
        if message["type"] == "http.request":
            taken += len(message.get("body", b""))
            if taken > limit:
                raise BodyTooLarge
        return message

    return bounded


def _with_headers(send: Send, cacheable: bool) -> Send:
    """`send` that adds the security headers, and `no-store` to anything not static: pages and
    answers hold sessions' data, which no cache (shared or the browser's) should keep."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in _HEADERS.items():
                headers.setdefault(name, value)
            if not cacheable:
                headers.setdefault("Cache-Control", "no-store")
        await send(message)

    return wrapped
