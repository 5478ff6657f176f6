"""The three worker pools, each polling its own task queue.

`workers/pools/llm.py`, `workers/pools/train.py` and `workers/pools/judge.py` run one pool
each as a process; `policyforge dev` runs all three in one process. Sessions (the workflow
code, which is light) are hosted on the LLM pool's queue, so a session is started on
`policyforge-llm`. The train pool polls two queues (the shared one and its kind's: `-cpu`,
or `-gpu` with `--gpu`), with one Temporal worker each, drawing on one set of slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import structlog
from temporalio.client import Client
from temporalio.worker import (
    CustomSlotSupplier,
    FixedSizeSlotSupplier,
    PollerBehaviorSimpleMaximum,
    SlotMarkUsedContext,
    SlotPermit,
    SlotReleaseContext,
    SlotReserveContext,
    Worker,
    WorkerTuner,
)

from workers.settings import Settings
from workflows.benchmark import BenchmarkWorkflow
from workflows.contracts.queues import WorkerKind, task_queue, worker_train_queues
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


# Activities heartbeat every 10 s against a 30 s heartbeat timeout, and training's carry the
# progress `policyforge run` shows: every beat reaches the server, not one per 0.8 x the
# timeout (the SDK's default: 24 s, with 6 s to spare).
HEARTBEAT_THROTTLE = timedelta(seconds=5)


def llm_worker(client: Client, settings: Settings) -> Worker:
    """The llm pool: sessions and benchmarks (workflow code) and every LLM call, many at a
    time (I/O bound); each call's tokens and cost go to the metrics endpoint."""
    from workers.pools.heartbeats import Heartbeats
    from workers.pools.metrics import LLMUsageMetrics

    return Worker(
        client,
        task_queue=task_queue("llm", settings.queue_prefix),
        workflows=[SessionWorkflow, BenchmarkWorkflow],
        activities=pool_activities("llm"),
        activity_executor=ThreadPoolExecutor(32),
        max_concurrent_activities=32,
        interceptors=[LLMUsageMetrics(), Heartbeats()],
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
    )


class _Permit(SlotPermit):
    used = False


class SharedSlots(CustomSlotSupplier):
    """Activity slots that several workers of one process share, so that the process runs at
    most `limit` activities across the queues it polls.

    A worker holds a slot while it polls, before any task arrives; counting those would leave
    one queue unpolled while the other waits idle on the last free slot (up to a minute per
    long poll). So a poll may start while fewer than `limit` activities run, one poll per
    queue at a time (`poller_behavior`): when both queues hand over a task for the last free
    slot at once, one activity more than `limit` runs, never more.
    """

    poller_behavior = PollerBehaviorSimpleMaximum(1)

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.running = 0
        # The SDK may call mark_slot_used and release_slot off the event loop's thread.
        self._lock = threading.Lock()
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit:
        loop = asyncio.get_running_loop()
        while True:
            freed = asyncio.Event()
            with self._lock:
                if self.running < self.limit:
                    return _Permit()
                self._waiting.append((loop, freed))
            await freed.wait()

    def try_reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit | None:
        # Eager tasks come from workflows on the same worker: the train pool hosts none.
        return None

    def mark_slot_used(self, ctx: SlotMarkUsedContext) -> None:
        if isinstance(ctx.permit, _Permit):
            ctx.permit.used = True
        with self._lock:
            self.running += 1

    def release_slot(self, ctx: SlotReleaseContext) -> None:
        if not (isinstance(ctx.permit, _Permit) and ctx.permit.used):
            return  # a poll that ended without a task
        with self._lock:
            self.running -= 1
            waiting, self._waiting = self._waiting, []
        for loop, freed in waiting:
            if not loop.is_closed():
                loop.call_soon_threadsafe(freed.set)

    def tuner(self) -> WorkerTuner:
        """A worker's tuner whose activity slots are these (it runs no other kind of task)."""
        one = FixedSizeSlotSupplier(1)
        return WorkerTuner.create_composite(
            workflow_supplier=one,
            activity_supplier=self,
            local_activity_supplier=one,
            nexus_supplier=one,
        )


def train_workers(client: Client, settings: Settings, kind: WorkerKind = "cpu") -> list[Worker]:
    """The train pool: reward validation, training and evaluation rollouts, one run per slot,
    from the shared training queue and the queue of its kind (sessions that asked for it)."""
    # Each run is a child process on the batched engine; the runs in progress share the
    # worker's cores (activities/training/core_share.py), re-shared as runs start and end.
    slots = SharedSlots(settings.train_concurrency)
    executor = ThreadPoolExecutor(slots.limit + 3)
    return [
        Worker(
            client,
            task_queue=queue,
            activities=pool_activities("train"),
            activity_executor=executor,
            tuner=slots.tuner(),
            activity_task_poller_behavior=slots.poller_behavior,
            max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        )
        for queue in worker_train_queues(kind, settings.queue_prefix)
    ]


def judge_worker(client: Client, settings: Settings) -> Worker:
    """The judge pool: judging rollouts, the agents' read-only session tools, and storing
    benchmark results."""
    return Worker(
        client,
        task_queue=task_queue("judge", settings.queue_prefix),
        activities=pool_activities("judge"),
        activity_executor=ThreadPoolExecutor(8),
        max_concurrent_activities=8,
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
    )


def pool_workers(name: str, client: Client, settings: Settings, gpu: bool = False) -> list[Worker]:
    """The Temporal workers of one pool (the train pool: one per queue it polls)."""
    if name == "train":
        return train_workers(client, settings, "gpu" if gpu else "cpu")
    return [POOLS[name](client, settings)]


POOLS: dict[str, Callable[[Client, Settings], Worker]] = {
    "llm": llm_worker,
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


def clean_temporary_folders(root: str | None = None) -> None:
    """At a worker's start: remove the temporary folders that killed workers and runs left
    behind (activities/runner/run_dirs.py), in one log line with their count and size."""
    from activities.runner import run_dirs

    reaped = run_dirs.reap_stale(root)
    if reaped.removed or reaped.left:
        structlog.get_logger().info(
            "removed the temporary folders of workers that are gone",
            folders=len(reaped.removed),
            bytes=reaped.bytes,
            left=reaped.left or None,
        )


async def run_pools(
    client: Client,
    settings: Settings,
    names: list[str],
    *,
    handle_signals: bool = True,
    gpu: bool = False,
    temp_root: bool | None = None,
) -> None:
    """Run the named pools until SIGINT/SIGTERM (or cancellation), then shut down gracefully.
    `gpu`: the train pool serves the GPU queue (the entry point checked that it may).
    `temp_root`: the process's temporary folders go into a worker folder of its own, removed by
    the next worker's start if this one is killed (activities/runner/run_dirs.py); by default
    when the call handles the signals, i.e. when it owns the process (not in tests)."""
    from activities.runner import run_dirs
    from activities.sandbox.os_limits import mark_not_dumpable

    # Workers hold keys and credentials: no same-uid process may read or trace them.
    mark_not_dumpable()
    await asyncio.to_thread(clean_temporary_folders)
    own_root = handle_signals if temp_root is None else temp_root
    with run_dirs.worker_temp_root() if own_root else contextlib.nullcontext():
        await _serve(client, settings, names, handle_signals=handle_signals, gpu=gpu)


async def _serve(
    client: Client, settings: Settings, names: list[str], *, handle_signals: bool, gpu: bool
) -> None:
    await log_sandbox_layers(names)
    warm_env_stack()
    prewarm_runners(names)
    workers = [w for name in names for w in pool_workers(name, client, settings, gpu)]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM) if handle_signals else ():
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        for worker in workers:
            await stack.enter_async_context(worker)
        await stop.wait()
