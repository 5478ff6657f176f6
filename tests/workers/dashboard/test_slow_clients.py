"""Half-sent requests cannot hold the dashboard: with hundreds of them open, a request is still
answered within a second; each is closed when its head (or its body) is not in by its deadline,
however slowly it dribbles bytes; and past the connection cap the oldest make room.

POLICYFORGE_TEST_BURST sets how many half-sent requests the burst test opens (the finding used
3,000; 400 keep the test quick on two cores)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
import urllib.request

from tests.workers.dashboard.client import address
from tests.workers.dashboard.conftest import QUICK

BURST = int(os.environ.get("POLICYFORGE_TEST_BURST", "400"))
ANSWER_WITHIN_S = 1.0


HEAD = "GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\nX-Slow: "  # never ends
# A sign-in whose body stops short of its Content-Length (the handler waits for the rest).
BODY = (
    "POST /login HTTP/1.1\r\nHost: {host}:{port}\r\n"
    "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ntoken="
)


def _half_sent(base: str, count: int, request: str = HEAD) -> list[socket.socket]:
    """`count` connections, each with a request that never ends."""
    host, port = address(base)
    opened = []
    for _ in range(count):
        sock = socket.create_connection((host, port), timeout=10)
        sock.sendall(request.format(host=host, port=port).encode())
        opened.append(sock)
    return opened


def _answer_time(base: str) -> float:
    """Seconds to a whole answer from /healthz on a new connection."""
    started = time.monotonic()
    with urllib.request.urlopen(base + "/healthz", timeout=30) as response:
        assert response.status == 200 and response.read()
    return time.monotonic() - started


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed this connection (no waiting; an answer before is read)."""
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
        return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        sock.setblocking(True)


def _wait_closed(socks: list[socket.socket], within_s: float) -> float:
    """Seconds until the server closed every one of `socks` (fails past `within_s`)."""
    started = time.monotonic()
    while not all(_closed(s) for s in socks):
        assert time.monotonic() - started < within_s, "half-sent requests still open"
        time.sleep(0.1)
    return time.monotonic() - started


def _dribble_until_closed(base: str, period_s: float, give_up_s: float) -> float:
    """Send a request head one byte every `period_s`: seconds until the server closed it."""
    host, port = address(base)
    started = time.monotonic()
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        while time.monotonic() - started < give_up_s:
            if _closed(sock):
                return time.monotonic() - started
            try:
                sock.sendall(b"X")
            except OSError:
                return time.monotonic() - started
            time.sleep(period_s)
    raise AssertionError(f"a dribbled head was still open after {give_up_s} s")


def _close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


async def test_a_burst_of_half_sent_requests_leaves_the_dashboard_answering(quick_dashboard):
    socks = await asyncio.to_thread(_half_sent, quick_dashboard, BURST)
    bodies = await asyncio.to_thread(_half_sent, quick_dashboard, 5, BODY)
    try:
        took = await asyncio.to_thread(_answer_time, quick_dashboard)
        print(f"with {BURST} half-sent requests open: answered in {took * 1000:.0f} ms")
        assert took < ANSWER_WITHIN_S

        margin = QUICK.head_timeout_s + 3
        closed_after = await asyncio.to_thread(_wait_closed, socks + bodies, margin)
        print(f"all half-sent requests closed {closed_after:.1f} s after the last was opened")
        assert await asyncio.to_thread(_answer_time, quick_dashboard) < ANSWER_WITHIN_S
    finally:
        _close_all(socks + bodies)


async def test_a_head_dribbled_a_byte_at_a_time_is_closed_at_its_deadline(quick_dashboard):
    took = await asyncio.to_thread(_dribble_until_closed, quick_dashboard, 0.25, 10)
    assert QUICK.head_timeout_s - 0.5 < took < QUICK.head_timeout_s + 2


async def test_past_the_cap_the_oldest_half_sent_requests_make_room(capped_dashboard):
    socks = await asyncio.to_thread(_half_sent, capped_dashboard, 100)
    try:
        took = await asyncio.to_thread(_answer_time, capped_dashboard)
        assert took < ANSWER_WITHIN_S
        # 50 at most: the oldest closed for the newest, and for the request answered above.
        assert all(_closed(s) for s in socks[:50])
        assert not any(_closed(s) for s in socks[-40:])
    finally:
        _close_all(socks)
