"""The one heartbeat loop of every activity that heartbeats: at once, then every
HEARTBEAT_EVERY (workflows/contracts/timeouts.py), from a task of its own while the activity
works, so the server knows its worker lives whatever the work blocks on, and a cancellation
reaches the activity."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from temporalio import activity

from workflows.contracts.timeouts import HEARTBEAT_EVERY


@contextlib.asynccontextmanager
async def heartbeating(
    details: Callable[[], Any] | None = None, *, beat: Callable[..., None] | None = None
) -> AsyncIterator[None]:
    """Heartbeat while the block runs, with `details()` when given (what a retry resumes
    from). `beat` sends one (default: the running activity's own heartbeat)."""
    send = beat or activity.heartbeat

    async def loop() -> None:
        while True:
            send(*(() if details is None else (details(),)))
            await asyncio.sleep(HEARTBEAT_EVERY.total_seconds())

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
