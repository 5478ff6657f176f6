"""Signing in: a random session per sign-in that expires, ends on sign-out or when the token
changes, in a cookie a script cannot read and another site cannot send; and at most
`MAX_WRONG_TOKENS` wrong tokens a minute from one address."""

from __future__ import annotations

import json

from tests.workers.dashboard.browser import chromium_page
from tests.workers.dashboard.client import FORM, JSON, TOKEN, Http
from workers.dashboard.auth import COOKIE

NEW_TOKEN = "another-long-enough-token-456"


async def _sign_in(base: str, token: str = TOKEN) -> tuple[Http, str]:
    http = Http(base)
    status, headers, _ = await http.post("/login", f"token={token}&next=/".encode(), **FORM)
    assert status == 303, status
    cookie = http.cookie()
    assert cookie
    return http, headers["set-cookie"]


async def _lists(base: str, cookie: str) -> int:
    """The status of the session list for a browser that sends this cookie value."""
    status, _, _ = await Http(base).get("/api/sessions", Cookie=f"{COOKIE}={cookie}")
    return status


async def test_each_sign_in_gets_its_own_cookie_and_ends_on_its_own(token_served):
    base = token_served.url
    first, set_cookie = await _sign_in(base)
    second, _ = await _sign_in(base)
    one, two = first.cookie(), second.cookie()
    assert one and two and one != two and TOKEN not in one

    # The cookie: no script reads it, no other site sends it, the whole dashboard, 12 hours.
    attributes = [a.strip().lower() for a in set_cookie.split(";")]
    assert "httponly" in attributes and "samesite=strict" in attributes
    assert "path=/" in attributes and "max-age=43200" in attributes
    assert "secure" not in attributes  # plain HTTP here: a Secure cookie would never come back
    # Host-only (no Domain): no other host's page gets it. Cookies ignore ports, so another
    # port of this host does; it is a random id that expires, never the token.
    assert not any(a.startswith("domain") for a in attributes)

    status, headers, body = await first.post("/logout", b"{}", **JSON)
    assert status == 200 and json.loads(body)["answer"]
    assert "max-age=0" in headers["set-cookie"].lower()
    # Ended on the server: the old value, sent again, no longer signs anyone in.
    assert await _lists(base, one) == 401
    assert await _lists(base, two) == 200

    # A new token ends every sign-in made with the old one.
    token_served.app.state.gate.change_token(NEW_TOKEN)
    assert await _lists(base, two) == 401
    await _sign_in(base, NEW_TOKEN)


async def test_a_cookie_is_secure_behind_tls(proxied_dashboard):
    http = Http(proxied_dashboard)
    # uvicorn takes the scheme from the proxy FORWARDED_ALLOW_IPS names (this machine here).
    status, headers, _ = await http.post(
        "/login", f"token={TOKEN}&next=/".encode(), **FORM, **{"X-Forwarded-Proto": "https"}
    )
    assert status == 303
    assert "secure" in [a.strip().lower() for a in headers["set-cookie"].split(";")]


async def test_sign_out_is_a_json_post_from_this_origin(token_served):
    http, _ = await _sign_in(token_served.url)
    status, _, _ = await http.post("/logout", b"", **FORM)
    assert status == 403
    status, _, _ = await http.post("/logout", b"{}", **JSON, Origin="http://evil.example")
    assert status == 403
    status, _, _ = await http.get("/api/sessions")
    assert status == 200


async def test_the_twentieth_wrong_token_in_a_minute_is_refused_unchecked(token_dashboard):
    http = Http(token_dashboard)
    answers = []
    for n in range(20):
        status, _, body = await http.post("/login", f"token=wrong-{n}&next=/".encode(), **FORM)
        answers.append(status)
    assert answers[:10] == [200] * 10 and answers[10:] == [429] * 10
    assert body.strip().count(b"\n") == 0 and b"wrong tokens" in body

    # From now on this address's tokens are not even compared, the right one included.
    status, headers, _ = await http.post("/login", f"token={TOKEN}&next=/".encode(), **FORM)
    assert status == 429 and int(headers["retry-after"]) > 0
    status, _, _ = await http.get("/api/sessions", Authorization=f"Bearer {TOKEN}")
    assert status == 429


async def test_wrong_bearer_tokens_count_as_wrong_tokens(token_dashboard):
    http = Http(token_dashboard)
    for n in range(10):
        status, _, _ = await http.get("/api/sessions", Authorization=f"Bearer wrong-token-{n}")
        assert status == 401
    status, _, _ = await http.get("/api/sessions", Authorization=f"Bearer {TOKEN}")
    assert status == 429


async def test_a_browser_signs_in_and_out_with_the_page(token_dashboard):
    async with chromium_page() as (tab, errors):
        await tab.goto(f"{token_dashboard}/benchmarks")
        assert "/login" in tab.url and await tab.locator("#sign-out").count() == 0
        await tab.fill("input[name=token]", TOKEN)
        await tab.click("button[type=submit]")
        await tab.wait_for_url(f"{token_dashboard}/benchmarks")
        cookie = next(c for c in await tab.context.cookies() if c["name"] == COOKIE)
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert await _lists(token_dashboard, cookie["value"]) == 200
        await tab.click("#sign-out")
        await tab.wait_for_url(f"{token_dashboard}/login")
        assert await _lists(token_dashboard, cookie["value"]) == 401
    assert errors == []
