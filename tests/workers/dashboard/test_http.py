"""The dashboard over real HTTP (uvicorn, the real Temporal dev server, real SeaweedFS): who
gets in, what a steering request must look like, and artifacts streamed with byte ranges."""

from __future__ import annotations

import json

import pytest

from activities.artifacts import ArtifactStore
from tests.workers.dashboard.client import TOKEN, Http
from workers.dashboard.auth import AuthConfigError, check_config


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
