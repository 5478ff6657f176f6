"""Task queue names of the worker pools (llm, train, judge).

The workflow schedules each activity on its pool's queue, and each worker polls the queue it
serves; a prefix lets several deployments share one namespace.
"""

from __future__ import annotations

from typing import Literal

DEFAULT_QUEUE_PREFIX = "policyforge"


def task_queue(pool: Literal["llm", "train", "judge"], prefix: str = DEFAULT_QUEUE_PREFIX) -> str:
    """Task queue of a worker pool; a prefix lets several deployments share one namespace."""
    return f"{prefix}-{pool}"


TASK_QUEUE_LLM = task_queue("llm")
TASK_QUEUE_TRAIN = task_queue("train")
TASK_QUEUE_JUDGE = task_queue("judge")
