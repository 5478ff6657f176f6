"""Request bodies are bounded before they are read: a body over the limit is refused from its
Content-Length alone, and a chunked one is not read past the limit, so the dashboard does not
grow with what a client sends (the public sign-in form included)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.workers.dashboard.client import TOKEN, address
from workers.dev.services import free_port

HUNDRED_MB = 100 * 1024 * 1024
CHUNK = 64 * 1024
ROOT = Path(__file__).resolve().parents[3]
GROWTH_BOUND_MB = 20  # what the server process may grow by while refusing 200 MB of bodies


def _head(base: str, length: int | None) -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return (
        f"POST /login HTTP/1.1\r\nHost: {address(base)[0]}\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\n{framing}\r\n\r\n"
    ).encode()


def _read_answer(sock: socket.socket) -> bytes:
    """The server's answer up to its end (the server closes after refusing a body)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except OSError:
        pass
    return data


def _refuse_declared(base: str, length: int) -> tuple[bytes, int]:
    """Declare a `length`-byte body and read the answer before sending any of it; then try to
    send it all: (answer, body bytes the server took before it closed)."""
    with socket.create_connection(address(base), timeout=15) as sock:
        sock.sendall(_head(base, length))
        answer = _read_answer(sock)
        return answer, _push(sock, b"a" * CHUNK, length // CHUNK)


def _refuse_chunked(base: str, total: int) -> tuple[bytes, int]:
    """A chunked body of `total` bytes: the first chunk, the answer, then the rest until the
    server stops taking it."""
    chunk = f"{CHUNK:x}\r\n".encode() + b"a" * CHUNK + b"\r\n"
    with socket.create_connection(address(base), timeout=15) as sock:
        sock.sendall(_head(base, None) + chunk)
        answer = _read_answer(sock)
        return answer, CHUNK + _push(sock, chunk, total // CHUNK - 1)


def _push(sock: socket.socket, data: bytes, times: int) -> int:
    sent = 0
    try:
        for _ in range(times):
            sock.sendall(data)
            sent += len(data)
    except OSError:
        pass  # the server closed the connection: it reads no more
    return sent


def _one_line_413(answer: bytes) -> None:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert body.strip().count(b"\n") == 0 and b"16384 bytes" in body, body


async def test_a_100_mb_login_body_is_refused_from_its_length_alone(token_dashboard):
    answer, taken = await asyncio.to_thread(_refuse_declared, token_dashboard, HUNDRED_MB)
    _one_line_413(answer)
    # The connection is closed: what was sent after the answer went no further than buffers.
    assert taken < 32 * 1024 * 1024


async def test_a_chunked_body_is_not_read_past_the_limit(token_dashboard):
    answer, taken = await asyncio.to_thread(_refuse_chunked, token_dashboard, HUNDRED_MB)
    _one_line_413(answer)
    assert taken < 32 * 1024 * 1024


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _wait_healthy(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "policyforge ui exited"
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("policyforge ui did not answer /healthz within 60 s")


async def test_the_ui_process_does_not_grow_with_two_100_mb_login_bodies(temporal_env, s3):
    """The finding: one 400 MB POST to /login took `policyforge ui` from 121 MB to 906 MB."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "POLICYFORGE_DASHBOARD_TOKEN": TOKEN,
        "POLICYFORGE_DASHBOARD_PORT": str(port),
        "POLICYFORGE_LOG_LEVEL": "warning",
    }
    # `python -m` from this checkout's root: the code under test, whatever is installed.
    process = subprocess.Popen(
        [sys.executable, "-m", "workers.cli", "ui"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await asyncio.to_thread(_wait_healthy, base, process)
        rss_before, peak_before = _kib(process.pid, "VmRSS"), _kib(process.pid, "VmHWM")
        declared, _ = await asyncio.to_thread(_refuse_declared, base, HUNDRED_MB)
        chunked, _ = await asyncio.to_thread(_refuse_chunked, base, HUNDRED_MB)
        await asyncio.to_thread(_wait_healthy, base, process)
        rss_after, peak_after = _kib(process.pid, "VmRSS"), _kib(process.pid, "VmHWM")
    finally:
        process.terminate()
        process.wait(timeout=20)
    grown_mb = (max(peak_after, rss_after) - max(peak_before, rss_before)) / 1024
    print(
        f"policyforge ui: RSS {rss_before / 1024:.0f} -> {rss_after / 1024:.0f} MB, peak "
        f"{peak_before / 1024:.0f} -> {peak_after / 1024:.0f} MB"
    )
    _one_line_413(declared)
    _one_line_413(chunked)
    assert grown_mb < GROWTH_BOUND_MB, f"grew {grown_mb:.0f} MB"
