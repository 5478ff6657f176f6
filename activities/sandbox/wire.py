"""Frames between the sandbox process and its client: a JSON header and a raw payload.

    <u32 header length><u32 payload length><header JSON><payload bytes>

No pickle anywhere: what the sandbox answers is parsed as JSON and float64 arrays, and checked
by the trusted side, so generated code cannot make its client run anything.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import IO, Any

_PREFIX = struct.Struct("<II")
# What a client accepts from the sandbox: answers are scores and short text, never bulk.
MAX_HEADER = 1 << 20
MAX_PAYLOAD = 16 << 20


class WireError(RuntimeError):
    """The peer closed the channel, sent a malformed frame, or took too long."""


def encode(header: dict[str, Any], payload: bytes = b"") -> bytes:
    """One frame: the length prefix, the JSON header and the payload."""
    head = json.dumps(header, separators=(",", ":")).encode()
    return _PREFIX.pack(len(head), len(payload)) + head + payload


def write_all(fd: int, data: bytes) -> None:
    """One unbuffered write (a frame is usually one syscall); loops on partial writes."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send(stream: IO[bytes], header: dict[str, Any], payload: bytes = b"") -> None:
    """Write one frame and flush (the sandbox side)."""
    stream.write(encode(header, payload))
    stream.flush()


def _decode_header(raw: bytes) -> dict[str, Any]:
    try:
        header = json.loads(raw)
    except ValueError:
        raise WireError("a frame header is not JSON") from None
    if not isinstance(header, dict):
        raise WireError("a frame header is not an object")
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
