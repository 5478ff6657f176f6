"""Frames between the sandbox process and its client: a JSON header and a raw payload.

    <u32 header length><u32 payload length><header JSON><payload bytes>

No pickle anywhere: what the sandbox answers is parsed as JSON and float64 arrays, and checked
by the trusted side, so generated code cannot make its client run anything.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import struct
import time
from typing import IO, Any

_PREFIX = struct.Struct("<II")
# What a client accepts from the sandbox: answers are scores and short text, never bulk.
MAX_HEADER = 1 << 20
MAX_PAYLOAD = 16 << 20
# Containers inside containers in a header: the deepest answer (a judgment's criteria) is 3.
MAX_DEPTH = 6
# Sent by the client when its deadline for an answer passed: the sandbox answers with the line
# of generated code it is running, then exits.
WHERE_SIGNAL = signal.SIGUSR1


class WireError(RuntimeError):
    """The peer closed the channel, sent a malformed frame, or took too long."""


def encode(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """One frame: the length prefix, the JSON header and the payload."""
    head = json.dumps(header, separators=(",", ":")).encode()
    return _PREFIX.pack(len(head), len(payload)) + head + payload


def write_all(fd: int, data: bytes, deadline: float | None = None) -> None:
    """One unbuffered write (a frame is usually one syscall); loops on partial writes. With a
    `deadline` (time.monotonic()) on a non-blocking fd, TimeoutError once it passes: a peer that
    stopped reading cannot hold the writer."""
    view = memoryview(data)
    while view:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise TimeoutError
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue  # the pipe filled between select and write: wait again


def send(stream: IO[bytes], header: dict[str, Any], payload: bytes = b"") -> None:
    """Write one frame and flush (the sandbox side)."""
    stream.write(encode(header, payload))
    stream.flush()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} overflows a float")
    return value


def _too_deep(value: Any) -> bool:
    """Whether containers nest deeper than MAX_DEPTH (iterative: no recursion to exhaust)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in children)
    return False


def _decode_header(raw: bytes) -> dict[str, Any]:
    """A header as plain JSON types: NaN, Infinity and overflowing numbers refused, nesting
    bounded, and every failure of the parser (deep nesting exhausts its recursion) a WireError."""
    try:
        header = json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError, MemoryError) as exc:
        raise WireError(f"a frame header is not plain JSON ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise WireError("a frame header is not an object")
    if _too_deep(header):
        raise WireError(f"a frame header nests deeper than {MAX_DEPTH} levels")
    return header


def recv(stream: IO[bytes]) -> tuple[dict[str, Any], bytes]:
    """Blocking read of one frame (the sandbox side, which trusts its client)."""
    prefix = stream.read(_PREFIX.size)
    if len(prefix) < _PREFIX.size:
        raise WireError("channel closed")
    head_len, payload_len = _PREFIX.unpack(prefix)
    header = _decode_header(stream.read(head_len))
    payload = stream.read(payload_len) if payload_len else b""
    return header, payload


class FrameReader:
    """Reads frames from an untrusted peer with a deadline and size limits (the client side)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = bytearray()

    def _fill(self, n: int, deadline: float) -> None:
        while len(self._buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, max(n - len(self._buf), 1 << 16))
            if not chunk:
                raise WireError("channel closed")
            self._buf += chunk

    def _take(self, n: int) -> bytes:
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def read(self, timeout_s: float) -> tuple[dict[str, Any], bytes]:
        """One frame within `timeout_s`; TimeoutError, or WireError when it is over the limits
        or malformed."""
        deadline = time.monotonic() + timeout_s
        self._fill(_PREFIX.size, deadline)
        head_len, payload_len = _PREFIX.unpack(bytes(self._buf[: _PREFIX.size]))
        if head_len > MAX_HEADER or payload_len > MAX_PAYLOAD:
            raise WireError(f"a frame of {head_len + payload_len:,} bytes is over the limit")
        self._fill(_PREFIX.size + head_len + payload_len, deadline)
        self._take(_PREFIX.size)
        header = _decode_header(self._take(head_len))
        return header, self._take(payload_len)
