"""The three worker pools, each polling its own task queue.

`workers/llm.py`, `workers/train.py` and `workers/judge.py` run one pool each as a process;
`policyforge dev` runs all three in one process. Sessions (the workflow code, which is light)
are hosted on the LLM pool's queue, so a session is started on `policyforge-llm`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import structlog
from temporalio.client import Client
from temporalio.worker import Worker

from workers.settings import Settings
from workflows.benchmark import BenchmarkWorkflow
from workflows.contracts.queues import task_queue
from workflows.contracts.session import ENV_IDS
from workflows.session import SessionWorkflow


def pool_activities(pool: str) -> list[Callable[..., Any]]:
    """The activities a pool's workers run (imported only by the pools that run them)."""
    if pool == "llm":
        from activities.llm.activities import LLM_ACTIVITIES

        return list(LLM_ACTIVITIES)
    if pool == "train":
        from activities.judging.checkpoints import score_checkpoint
        from activities.training.activities import TRAIN_ACTIVITIES
        from activities.training.batch_activity import train_batch
        from activities.training.stop_at_pass import use_scorer

        # Stop at pass: training judges its checkpoints with the judging stage's scorer.
        use_scorer(score_checkpoint)
        return [*TRAIN_ACTIVITIES, train_batch]
    from activities.benchmarks import store_benchmark
    from activities.judging.activities import JUDGE_ACTIVITIES
    from activities.lessons import record_lesson

    return [*JUDGE_ACTIVITIES, store_benchmark, record_lesson]


def llm_worker(client: Client, settings: Settings) -> Worker:
    """The llm pool: sessions and benchmarks (workflow code) and every LLM call, many at a
    time (I/O bound); each call's tokens and cost go to the metrics endpoint."""
    from workers.metrics import LLMUsageMetrics

    return Worker(
        client,
        task_queue=task_queue("llm", settings.queue_prefix),
        workflows=[SessionWorkflow, BenchmarkWorkflow],
        activities=pool_activities("llm"),
        activity_executor=ThreadPoolExecutor(32),
        max_concurrent_activities=32,
        interceptors=[LLMUsageMetrics()],
    )


def train_worker(client: Client, settings: Settings) -> Worker:
    """The train pool: reward validation, training and evaluation rollouts, one run per slot."""
    # Each training run is a single-threaded child process: one run per core.
    slots = max(1, settings.train_concurrency)
    return Worker(
        client,
        task_queue=task_queue("train", settings.queue_prefix),
        activities=pool_activities("train"),
        activity_executor=ThreadPoolExecutor(slots + 2),
        max_concurrent_activities=slots,
        # Heartbeats carry the progress `policyforge run` shows; by default the SDK sends them
        # to the server only every 0.8 x heartbeat timeout (48 s here).
        max_heartbeat_throttle_interval=timedelta(seconds=5),
    )


def judge_worker(client: Client, settings: Settings) -> Worker:
    """The judge pool: judging rollouts, the agents' read-only session tools, and storing
    benchmark results."""
    return Worker(
        client,
        task_queue=task_queue("judge", settings.queue_prefix),
        activities=pool_activities("judge"),
        activity_executor=ThreadPoolExecutor(8),
        max_concurrent_activities=8,
    )


POOLS: dict[str, Callable[[Client, Settings], Worker]] = {
    "llm": llm_worker,
    "train": train_worker,
    "judge": judge_worker,
}


async def log_sandbox_layers(names: list[str]) -> None:
    """Pools that run generated code probe the sandbox's layers at start and say which hold;
    a missing required layer is logged as the one-line refusal every such run will get."""
    if not {"train", "judge"} & set(names):
        return
    from activities.sandbox import layers
    from activities.sandbox.client import probe

    log = structlog.get_logger()
    applied, missing = await asyncio.to_thread(probe)
    refused = layers.refusal(missing)
    if refused:
        log.error("sandbox refuses generated code", reason=refused, applied=applied)
    else:
        log.info("sandbox layers", applied=applied, missing=missing or None)


def warm_env_stack() -> None:
    """Build one MuJoCo env before any activity thread runs. The first env a process builds
    imports Gymnasium's MuJoCo modules, PyOpenGL and libEGL; three sessions' first LLM calls
    doing that at once on their activity threads once hung an LLM worker for minutes (the chaos
    suite, under load). Done here, on one thread, later threads find it all loaded."""
    from activities.envs.spec import env_spec

    env_spec(ENV_IDS[0])


def prewarm_runners(names: list[str]) -> None:
    """The pools that start runner children have their template import the runner's modules
    while the worker waits for its first task (activities/runner/launch.py)."""
    from activities.judging.job import MODULE as JUDGE_JOB
    from activities.runner.supervisor import prewarm
    from activities.training.job import MODULE as TRAIN_JOB

    jobs = {"train": TRAIN_JOB, "judge": JUDGE_JOB}
    prewarm(*(jobs[name] for name in names if name in jobs))


async def run_pools(
    client: Client, settings: Settings, names: list[str], *, handle_signals: bool = True
) -> None:
    """Run the named pools until SIGINT/SIGTERM (or cancellation), then shut down gracefully."""
    from activities.sandbox.os_limits import mark_not_dumpable

    # Workers hold keys and credentials: no same-uid process may read or trace them.
    mark_not_dumpable()
    await log_sandbox_layers(names)
    warm_env_stack()
    prewarm_runners(names)
    workers = [POOLS[name](client, settings) for name in names]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM) if handle_signals else ():
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        for worker in workers:
            await stack.enter_async_context(worker)
        await stop.wait()
