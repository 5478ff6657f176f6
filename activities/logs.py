"""A structlog logger bound to the running activity: session_id, iteration, activity."""

from __future__ import annotations

import structlog
from temporalio import activity


def activity_logger(iteration: int | None = None, **extra: object) -> structlog.stdlib.BoundLogger:
    """The structlog logger for this activity's lines, bound to its session, type and attempt
    (and `iteration`, `extra`), so every line can be traced to its run.

    The iteration is also bound to the activity's context, so the other lines written while it
    runs (the LLM call's, boto3's, the SDK's) carry it too; each activity runs in a context of
    its own, so it goes no further.
    """
    info = activity.info()
    if iteration is not None:
        structlog.contextvars.bind_contextvars(iteration=iteration)
    return structlog.get_logger().bind(
        session_id=info.workflow_id,
        activity=info.activity_type,
        attempt=info.attempt,
        **({"iteration": iteration} if iteration is not None else {}),
        **extra,
    )
