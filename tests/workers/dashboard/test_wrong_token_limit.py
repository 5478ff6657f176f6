"""The wrong-token limit holds against a client that races it, forges where it comes from, or
borrows a victim's browser: attempts are counted before their tokens are read (50 sent at once
get 10 answers), per client and per token, X-Forwarded-For is believed only from a configured
proxy, and another site's sign-in post is refused before anything is counted."""

from __future__ import annotations

import asyncio

from tests.workers.dashboard.client import FORM, TOKEN, Http, address
from workers.dashboard.signins import MAX_WRONG_TOKENS, MAX_WRONG_TOKENS_ALL

AT_ONCE = 50


def _head(base: str, length: int) -> bytes:
    host, port = address(base)
    return (
        f"POST /login HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()


async def _status(reader: asyncio.StreamReader) -> int:
    line = await reader.readline()
    await reader.read()  # the rest, up to the server's close
    return int(line.split()[1])


async def _guess_at_once(base: str, count: int) -> list[int]:
    """`count` wrong tokens, every head sent before any body (the race that let 999 of 1,000
    through): the statuses of their answers."""
    streams = [await asyncio.open_connection(*address(base)) for _ in range(count)]
    bodies = [f"token=wrong-{n}&next=/".encode() for n in range(count)]
    for (_, writer), body in zip(streams, bodies, strict=True):
        writer.write(_head(base, len(body)))
    await asyncio.sleep(0.5)  # every head read: every handler waits for its body
    for (_, writer), body in zip(streams, bodies, strict=True):
        writer.write(body)
    try:
        return await asyncio.gather(*(_status(reader) for reader, _ in streams))
    finally:
        for _, writer in streams:
            writer.close()


async def _sign_in(http: Http, token: str, **headers: str) -> tuple[int, bytes]:
    status, _, body = await http.post("/login", f"token={token}&next=/".encode(), **FORM, **headers)
    return status, body


async def test_wrong_tokens_sent_at_once_get_no_more_answers_than_the_limit(token_dashboard):
    statuses = await _guess_at_once(token_dashboard, AT_ONCE)
    answered = statuses.count(200)  # "That token is not this dashboard's."
    print(f"{AT_ONCE} wrong tokens at once: {answered} answered, {statuses.count(429)} refused")
    assert answered == MAX_WRONG_TOKENS
    assert statuses.count(429) == AT_ONCE - MAX_WRONG_TOKENS

    # Locked: the right token is refused unchecked, in the form and as a bearer.
    http = Http(token_dashboard)
    status, body = await _sign_in(http, TOKEN)
    assert status == 429 and b"wrong tokens" in body
    status, _, _ = await http.get("/api/sessions", Authorization=f"Bearer {TOKEN}")
    assert status == 429


async def test_a_forged_forwarded_for_gets_no_fresh_allowance(token_dashboard):
    http = Http(token_dashboard)
    statuses = [
        (await _sign_in(http, "wrong", **{"X-Forwarded-For": f"10.0.0.{n}"}))[0]
        for n in range(MAX_WRONG_TOKENS + 2)
    ]
    assert statuses == [200] * MAX_WRONG_TOKENS + [429, 429]


async def test_behind_a_proxy_each_client_has_its_limit_and_the_token_one_for_all(
    proxied_dashboard,
):
    http = Http(proxied_dashboard)

    async def guesses(client: str, count: int) -> list[int]:
        return [
            (await _sign_in(http, "wrong", **{"X-Forwarded-For": client}))[0] for _ in range(count)
        ]

    # The proxy's X-Forwarded-For names the client: one client's limit is its own.
    assert await guesses("10.0.0.1", MAX_WRONG_TOKENS + 1) == [200] * MAX_WRONG_TOKENS + [429]
    status, _ = await _sign_in(http, TOKEN, **{"X-Forwarded-For": "10.0.0.2"})
    assert status == 303  # another client signs in; a right token is not counted

    # Many clients together meet the token's own limit.
    clients = MAX_WRONG_TOKENS_ALL // MAX_WRONG_TOKENS - 1
    for n in range(clients):
        assert await guesses(f"10.0.1.{n}", MAX_WRONG_TOKENS) == [200] * MAX_WRONG_TOKENS
    status, body = await _sign_in(http, "wrong", **{"X-Forwarded-For": "10.0.2.1"})
    assert status == 429 and b"for this dashboard" in body


async def test_another_sites_page_cannot_spend_a_browsers_wrong_tokens(token_dashboard):
    http = Http(token_dashboard)
    evil = [{"Origin": "http://evil.example"}] * (MAX_WRONG_TOKENS + 5) + [
        {"Referer": "http://evil.example/page.html"},
        {"Origin": "null"},
    ]
    for headers in evil:
        status, body = await _sign_in(http, "wrong", **headers)
        assert status == 403 and b"not this dashboard" in body, (headers, body)

    # Nothing was counted: this dashboard's own page still gets every wrong token, and signs in.
    own = {"Origin": token_dashboard, "Referer": f"{token_dashboard}/login"}
    for _ in range(MAX_WRONG_TOKENS - 1):
        assert (await _sign_in(http, "wrong", **own))[0] == 200
    assert (await _sign_in(http, TOKEN, **own))[0] == 303
