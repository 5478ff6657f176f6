"""The dashboard over real HTTP (uvicorn, the real Temporal dev server, real SeaweedFS): who
gets in, what a steering request must look like, and artifacts streamed with byte ranges."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import replace
from http.cookiejar import CookieJar
from typing import Any

import pytest

from activities.artifacts import ArtifactStore
from workers.dashboard.auth import AuthConfigError, check_config
from workers.dashboard.server import serving
from workers.services import free_port
from workers.settings import Settings

TOKEN = "a-long-enough-test-token-123"


class Http:
    """A small HTTP client (urllib in a thread) that keeps cookies and never follows
    redirects, so a test sees each answer as the browser gets it."""

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


async def _dashboard(temporal_env, token: str | None) -> AsyncIterator[str]:
    settings = replace(
        Settings(), dashboard_host="127.0.0.1", dashboard_port=free_port(), dashboard_token=token
    )
    async with serving(temporal_env.client, settings):
        yield f"http://127.0.0.1:{settings.dashboard_port}"


@pytest.fixture
async def open_dashboard(temporal_env, s3) -> AsyncIterator[str]:
    async for url in _dashboard(temporal_env, None):
        yield url


@pytest.fixture
async def token_dashboard(temporal_env, s3) -> AsyncIterator[str]:
    async for url in _dashboard(temporal_env, TOKEN):
        yield url


def test_off_loopback_without_a_token_is_refused_in_one_line():
    with pytest.raises(AuthConfigError) as refused:
        check_config("0.0.0.0", None)
    assert "POLICYFORGE_DASHBOARD_TOKEN" in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(AuthConfigError, match="at least 16"):
        check_config("0.0.0.0", "short")
    check_config("0.0.0.0", TOKEN)
    check_config("127.0.0.1", None)
    check_config("::1", None)


async def test_a_token_dashboard_shows_nothing_before_sign_in(token_dashboard):
    http = Http(token_dashboard)
    status, headers, _ = await http.get("/")
    assert status == 303 and headers["location"].startswith("/login")
    status, _, body = await http.get("/api/sessions")
    assert status == 401 and b"token" in body
    status, _, _ = await http.post(
        "/api/sessions/x/abort", b"{}", **{"Content-Type": "application/json"}
    )
    assert status == 401

    form = "application/x-www-form-urlencoded"
    status, _, body = await http.post("/login", b"token=wrong&next=/", **{"Content-Type": form})
    assert status == 200 and b"not this dashboard" in body
    status, headers, _ = await http.post(
        "/login", f"token={TOKEN}&next=/benchmarks".encode(), **{"Content-Type": form}
    )
    assert status == 303 and headers["location"] == "/benchmarks"
    cookie = headers["set-cookie"]
    assert TOKEN not in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    status, _, body = await http.get("/api/sessions")
    assert status == 200 and "sessions" in json.loads(body)

    # Scripts send the token as a bearer token instead.
    status, _, _ = await Http(token_dashboard).get("/api/sessions", Authorization=f"Bearer {TOKEN}")
    assert status == 200


async def test_changes_must_be_json_from_this_origin(open_dashboard):
    http = Http(open_dashboard)
    status, _, body = await http.post(
        "/api/sessions/x/abort",
        b"reason=x",
        **{"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 403 and b"JSON" in body
    status, _, body = await http.post(
        "/api/sessions/x/abort",
        b"{}",
        **{"Content-Type": "application/json", "Origin": "http://evil.example"},
    )
    assert status == 403 and b"evil.example" in body
    status, _, body = await http.post(
        "/api/sessions/no-such-session/extend",
        b'{"iterations": 1}',
        **{"Content-Type": "application/json"},
    )
    assert status == 409 and b"no-such-session" in body
    status, _, body = await http.post(
        "/api/sessions/no-such-session/extend",
        b'{"iterations": "two"}',
        **{"Content-Type": "application/json"},
    )
    assert status == 400 and b"iterations" in body


async def test_a_loopback_dashboard_answers_only_to_loopback_names(open_dashboard):
    status, _, _ = await Http(open_dashboard).get("/api/sessions", Host="rebound.example:80")
    assert status == 421
    status, _, _ = await Http(open_dashboard).get("/healthz")
    assert status == 200


async def test_videos_stream_in_ranges_and_nothing_outside_the_session(open_dashboard):
    store = ArtifactStore()
    data = bytes(range(256)) * 40
    store.put_bytes("sessions/range-test/iter_1/run/videos/eval.mp4", data, "video/mp4")
    store.put_text("sessions/other/secret.txt", "not yours")
    http = Http(open_dashboard)

    status, headers, body = await http.get("/artifacts/range-test/iter_1/run/videos/eval.mp4")
    assert status == 200 and body == data and headers["content-type"] == "video/mp4"
    status, headers, body = await http.get(
        "/artifacts/range-test/iter_1/run/videos/eval.mp4", Range="bytes=100-299"
    )
    assert status == 206 and body == data[100:300]
    assert headers["content-range"] == f"bytes 100-299/{len(data)}"
    status, _, body = await http.get(
        "/artifacts/range-test/iter_1/run/videos/eval.mp4", Range="bytes=-10"
    )
    assert status == 206 and body == data[-10:]

    for path in (
        "/artifacts/range-test/../other/secret.txt",
        "/artifacts/range-test/%2e%2e/other/secret.txt",
    ):
        status, _, body = await http.get(path)
        assert status == 404 and b"not yours" not in body
    status, _, _ = await http.get("/artifacts/range-test/iter_1/missing.mp4")
    assert status == 404


async def test_bad_filters_are_named(open_dashboard):
    status, _, body = await Http(open_dashboard).get("/api/sessions?env=Nope-v0")
    assert status == 400 and b"env: unknown environment" in body
    status, _, body = await Http(open_dashboard).get("/api/sessions?passed=maybe")
    assert status == 400 and b"passed" in body
