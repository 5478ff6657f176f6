"""Task queue names of the worker pools (llm, train, judge), and the training queues that
sessions asking for an accelerator train on.

The workflow schedules each activity on its pool's queue, and each worker polls the queue it
serves; a prefix lets several deployments share one namespace. Every training worker polls the
shared `<prefix>-train`; a CPU one also polls `<prefix>-train-cpu`, a GPU one
(`policyforge worker train --gpu`) `<prefix>-train-gpu`, so a session that asks for either
waits for such a worker, and one that asks for `any` takes the first free one.
"""

from __future__ import annotations

from typing import Literal

DEFAULT_QUEUE_PREFIX = "policyforge"

Accelerator = Literal["any", "gpu", "cpu"]
# What a training worker runs on: it serves the shared queue and the one of its kind.
WorkerKind = Literal["gpu", "cpu"]


def task_queue(pool: Literal["llm", "train", "judge"], prefix: str = DEFAULT_QUEUE_PREFIX) -> str:
    """Task queue of a worker pool; a prefix lets several deployments share one namespace."""
    return f"{prefix}-{pool}"


def train_queue(accelerator: Accelerator, prefix: str = DEFAULT_QUEUE_PREFIX) -> str:
    """The training queue for a session's accelerator: `any` is the shared one."""
    shared = task_queue("train", prefix)
    return shared if accelerator == "any" else f"{shared}-{accelerator}"


def worker_train_queues(kind: WorkerKind, prefix: str = DEFAULT_QUEUE_PREFIX) -> tuple[str, str]:
    """The queues a training worker of this kind polls: the shared one, then its own."""
    return train_queue("any", prefix), train_queue(kind, prefix)


# Who serves a queue, by the end of its name: "waiting for a GPU training worker".
_WORKERS = {
    "-train-gpu": "a GPU training worker",
    "-train-cpu": "a CPU training worker",
    "-train": "a training worker",
    "-llm": "an LLM worker",
    "-judge": "a judge worker",
}


def queue_worker(queue: str) -> str:
    """Who serves a queue, for people: 'a GPU training worker' for `<prefix>-train-gpu`,
    'a worker' for a name that is none of ours."""
    return next((who for end, who in _WORKERS.items() if queue.endswith(end)), "a worker")


TASK_QUEUE_LLM = task_queue("llm")
TASK_QUEUE_TRAIN = task_queue("train")
TASK_QUEUE_TRAIN_GPU = train_queue("gpu")
TASK_QUEUE_TRAIN_CPU = train_queue("cpu")
TASK_QUEUE_JUDGE = task_queue("judge")
