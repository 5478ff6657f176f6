"""Heartbeats for the llm pool's activities, each one provider call that may take minutes.

The call blocks a thread of the pool's executor, so nothing in it can beat. This interceptor
beats for it from the worker's event loop while the call runs (activities/heartbeats.py). A
worker that dies mid-call (a power loss while the video judge watches) stops beating, and the
server retries the call on another worker within the heartbeat timeout
(workflows/contracts/timeouts.py), not when the call's 6-minute start-to-close runs out.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from activities.heartbeats import heartbeating


class Heartbeats(Interceptor):
    """Beats for every activity scheduled with a heartbeat timeout, while it runs."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Beating(next)


class _Beating(ActivityInboundInterceptor):
    _outbound: ActivityOutboundInterceptor | None = None

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        # The outbound side beats on the event loop (the activity's own context beats from
        # its thread, through the loop, and must not be called on it).
        self._outbound = outbound
        super().init(outbound)

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        outbound = self._outbound
        if outbound is None or activity.info().heartbeat_timeout is None:
            return await super().execute_activity(input)

        async with heartbeating(beat=outbound.heartbeat):
            return await super().execute_activity(input)
