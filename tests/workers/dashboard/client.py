"""A small HTTP client for dashboard tests, and raw sockets for what urllib will not send."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import urlsplit

TOKEN = "a-long-enough-test-token-123"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
JSON = {"Content-Type": "application/json"}


class Http:
    """urllib in a thread, keeping cookies and never following redirects, so a test sees each
    answer as the browser gets it."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = CookieJar()

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), NoRedirect()
        )

    def _call(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(self.base + path, body, headers, method=method)
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    async def get(self, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
        return await asyncio.to_thread(self._call, "GET", path, None, headers)

    async def post(
        self, path: str, body: bytes, **headers: str
    ) -> tuple[int, dict[str, str], bytes]:
        return await asyncio.to_thread(self._call, "POST", path, body, headers)

    def cookie(self) -> str | None:
        return next((c.value for c in self.jar), None)


def address(base: str) -> tuple[str, int]:
    parts = urlsplit(base)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port
