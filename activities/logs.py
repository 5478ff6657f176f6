"""A structlog logger bound to the running activity: session_id, iteration, activity."""

from __future__ import annotations

import structlog
from temporalio import activity


def activity_logger(iteration: int | None = None, **extra: object) -> structlog.stdlib.BoundLogger:
    """The structlog logger for this activity's lines, bound to its session, type and attempt
    (and `iteration`, `extra`), so every line can be traced to its run."""
    info = activity.info()
    return structlog.get_logger().bind(
        session_id=info.workflow_id,
        activity=info.activity_type,
        attempt=info.attempt,
        **({"iteration": iteration} if iteration is not None else {}),
        **extra,
    )
