"""How long a client may take to send a request, and how many connections it may hold open.

uvicorn's h11 protocol waits for a request's head and body for ever and takes every connection
the OS hands it: 3,000 half-sent requests were all held, and near 20,000 the process (the
worker pools and the metrics listener in it too) ran out of descriptors. This protocol gives a
request's head and its body a deadline each, counted from when that part began (a byte now and
then does not move it), and keeps at most `max_connections` open: past that, the oldest
connection still waiting for a request head (half-sent, or idle between requests) is closed to
make room, so that a burst of them never shuts out a real request; when every connection is
busy with a request, the new one is refused. Closes are not logged: a burst must not fill the
log either.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 10.0  # from a connection's first byte (or its previous answer) to a whole head
BODY_TIMEOUT_S = 10.0  # from the head to the end of the body (16 KB at most: guard.MAX_BODY)
MAX_CONNECTIONS = 1000

Phase = Literal["head", "body"]
_PHASES: dict[object, Phase] = {h11.IDLE: "head", h11.SEND_BODY: "body"}


def default_max_connections() -> int:
    """MAX_CONNECTIONS, and never over half this process's descriptors: the rest are for the
    worker pools, S3, Temporal and the metrics listener."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, soft // 2))


@dataclass(frozen=True)
class Limits:
    """A server's read deadlines and connection cap (tests shorten them)."""

    head_timeout_s: float = HEAD_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    max_connections: int = field(default_factory=default_max_connections)


class _Bounded(H11Protocol):
    """uvicorn's h11 protocol with read deadlines and a connection cap (`bounded` makes one
    class per server: the connections waiting for a head are shared by its instances)."""

    limits: ClassVar[Limits]
    waiting: ClassVar[dict[_Bounded, None]]  # waiting for a request head, oldest first

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: Phase | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._upgraded = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()
        if len(self.connections) > self.limits.max_connections:
            oldest = next(iter(self.waiting), self)
            # `self` is the oldest only when no other connection waits: all are busy.
            oldest.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()  # the next request's head, on a kept-alive connection

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        # The transport is the WebSocket's from now on: no deadline of ours may close it.
        self._upgraded = True
        self._stop_clock()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_clock()
        super().connection_lost(exc)

    def close(self) -> None:
        """Close the connection (a deadline passed, or room is needed)."""
        self._stop_clock()
        self.transport.close()

    def _watch(self) -> None:
        """Start the deadline of the part of a request now being read, when that part has just
        begun (None: the request is read, the app has it)."""
        phase = None
        if not self._upgraded and not self.transport.is_closing():
            phase = _PHASES.get(self.conn.their_state)
        if phase == self._phase:
            return
        self._stop_clock()
        self._phase = phase
        if phase is None:
            return
        if phase == "head":
            self.waiting[self] = None
        timeout = self.limits.head_timeout_s if phase == "head" else self.limits.body_timeout_s
        self._deadline = self.loop.call_later(timeout, self.close)

    def _stop_clock(self) -> None:
        self._phase = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.waiting.pop(self, None)


def bounded(limits: Limits) -> type[H11Protocol]:
    """uvicorn's `http` protocol class for one server under `limits`."""
    return type("BoundedH11Protocol", (_Bounded,), {"limits": limits, "waiting": {}})
