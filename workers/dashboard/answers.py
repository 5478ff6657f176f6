"""The dashboard's JSON answers and its errors: one line each, with no backend internals.

An error a person or a script gets is `{"error": "<one line>"}`: what to change, never the
database's, Temporal's or Python's own text, which goes to the dashboard's log instead.
"""

from __future__ import annotations

import json
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from temporalio.service import RPCError

from workers.dashboard.text import one_line

TEMPORAL_DOWN = "Temporal did not answer (the dashboard's log says why)"


class JSON(JSONResponse):
    """A JSON answer in ASCII: a direction override or an escape sequence in what it carries
    reaches a terminal (curl) as a \\u escape, never as the character itself."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


def error(status: int, message: object, headers: dict[str, str] | None = None) -> JSON:
    """A refusal: `{"error": "<one line>"}`, never cached."""
    return JSON(
        {"error": one_line(message)},
        status,
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


def temporal_failed(exc: RPCError, doing: str) -> str:
    """Temporal's failure: logged whole, and said in one line without its text."""
    structlog.get_logger().warning(
        "dashboard: Temporal failed", doing=doing, status=str(exc.status), error=exc.message
    )
    return f"{doing}: {TEMPORAL_DOWN}"


def install(app: FastAPI) -> None:
    """Answer every failure of a route in one line."""

    async def http_error(_: Request, exc: Exception) -> JSON:
        assert isinstance(exc, HTTPException)
        return error(exc.status_code, exc.detail, dict(exc.headers or {}))

    async def bad_request(_: Request, exc: Exception) -> JSON:
        assert isinstance(exc, RequestValidationError)
        # FastAPI's own answer lists pydantic's internals; a person needs the parameter.
        named = [
            f"{e.get('loc', ['?'])[-1]}: {str(e.get('msg', 'invalid')).lower()}"
            for e in exc.errors()
        ]
        return error(400, "; ".join(named) or "invalid request")

    async def rpc_error(request: Request, exc: Exception) -> JSON:
        assert isinstance(exc, RPCError)
        return error(502, temporal_failed(exc, request.url.path))

    async def crashed(_: Request, exc: Exception) -> JSON:
        structlog.get_logger().exception("dashboard: a route failed", error=str(exc))
        return error(500, "the dashboard failed on this request (its log says why)")

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, bad_request)
    app.add_exception_handler(RPCError, rpc_error)
    app.add_exception_handler(Exception, crashed)
