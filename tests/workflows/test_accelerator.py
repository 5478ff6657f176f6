"""A session's accelerator picks the queue of its train-pool work: `any` keeps the shared
queue (and today's commands), `gpu` and `cpu` wait on their own queue, visibly, until a worker
of that kind polls it. Real dev server, stand-in activities."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker

from tests.builders import start_session
from tests.workflows.test_session import Script
from workers.cli.sessions import waiting_for_worker
from workers.dashboard.sessions import SessionReader
from workflows.contracts.queues import (
    queue_worker,
    task_queue,
    train_queue,
    worker_train_queues,
)
from workflows.session import SessionWorkflow
from workflows.step_base import ACCELERATOR_PATCH

INPUTS = {"prompt": "run forward", "env_id": "HalfCheetah-v5", "total_timesteps": 1000}
TRAIN_POOL = {"validate_reward", "train_policy", "train_batch", "evaluate_policy"}


def test_queue_names_follow_the_prefix():
    assert train_queue("any") == task_queue("train") == "policyforge-train"
    assert train_queue("gpu", "pf-x") == "pf-x-train-gpu"
    assert worker_train_queues("cpu", "pf-x") == ("pf-x-train", "pf-x-train-cpu")
    assert worker_train_queues("gpu") == ("policyforge-train", "policyforge-train-gpu")
    assert queue_worker("pf-x-train-gpu") == "a GPU training worker"
    assert queue_worker("pf-x-train") == "a training worker"
    assert queue_worker("pf-x-llm") == "an LLM worker"
    assert queue_worker("elsewhere") == "a worker"


@contextlib.asynccontextmanager
async def workers(
    client: Client, script: Script, prefix: str, train_queues: list[str]
) -> AsyncIterator[None]:
    """The llm and judge pools' stand-ins, and the train pool's on the given queues."""
    acts = script.activities()
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(
            Worker(
                client,
                task_queue=task_queue("llm", prefix),
                workflows=[SessionWorkflow],
                activities=acts["llm"],
            )
        )
        await stack.enter_async_context(
            Worker(client, task_queue=task_queue("judge", prefix), activities=acts["judge"])
        )
        for queue in train_queues:
            await stack.enter_async_context(
                Worker(client, task_queue=queue, activities=acts["train"])
            )
        yield


async def train_pool_queues(handle: WorkflowHandle) -> set[str]:
    """The queues the session scheduled its train-pool activities on."""
    history = await handle.fetch_history()
    return {
        e.activity_task_scheduled_event_attributes.task_queue.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name in TRAIN_POOL
    }


async def markers(handle: WorkflowHandle) -> list[str]:
    history = await handle.fetch_history()
    return [
        str(e.marker_recorded_event_attributes)
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]


async def until_waiting(client: Client, handle: WorkflowHandle, timeout: float = 30) -> str:
    """What the status says the session waits for, once it waits for a worker."""
    for _ in range(int(timeout / 0.1)):
        waiting = await waiting_for_worker(client, await handle.describe())
        if waiting:
            return waiting
        await asyncio.sleep(0.1)
    raise AssertionError("the session never said it waits for a worker")


async def test_a_default_session_trains_on_the_shared_queue_without_a_marker(
    temporal_env, queue_prefix
):
    client = temporal_env.client
    shared = task_queue("train", queue_prefix)
    async with workers(client, Script(scores=[0.9]), queue_prefix, [shared]):
        handle = await start_session(client, queue_prefix, **INPUTS)
        assert (await handle.result()).passed
        status = await handle.query(SessionWorkflow.status)
    assert await train_pool_queues(handle) == {shared}
    assert not any(ACCELERATOR_PATCH in m for m in await markers(handle))
    assert status.accelerator == "any" and status.train_queue is None and status.waiting is None


async def test_a_gpu_session_says_it_waits_for_a_gpu_worker_then_trains_on_one(
    temporal_env, queue_prefix
):
    client = temporal_env.client
    script = Script(scores=[0.9])
    gpu = train_queue("gpu", queue_prefix)
    memo = {"prompt": "run forward", "dashboard_url": "http://dash.example:8234"}
    # A CPU training worker (the shared queue and -cpu) is there: it must not take the work.
    cpu_worker = list(worker_train_queues("cpu", queue_prefix))
    async with workers(client, script, queue_prefix, cpu_worker):
        handle = await start_session(client, queue_prefix, memo, accelerator="gpu", **INPUTS)
        waiting = await until_waiting(client, handle)
        assert waiting == f"waiting for a GPU training worker (no worker polls queue {gpu})"
        # The dashboard's session page (and its JSON) says the same.
        view = await SessionReader(client).view(handle.id)
        assert view.status is not None and view.status.waiting == waiting
        assert view.status.train_queue == gpu and view.status.accelerator == "gpu"
        # The Web UI's details name the queue the session's training waits on.
        metadata = await handle.query("__temporal_workflow_metadata")
        details = str(getattr(metadata, "current_details", metadata))
        assert f"training on queue `{gpu}` (accelerator gpu)" in details
        assert "train_policy" not in script.calls

        acts = script.activities()
        async with Worker(client, task_queue=gpu, activities=acts["train"]):
            result = await asyncio.wait_for(handle.result(), timeout=60)
    assert result.passed
    assert await train_pool_queues(handle) == {gpu}
    assert any(ACCELERATOR_PATCH in m for m in await markers(handle))
    # The history replays against the code that made it (the patched branch is deterministic).
    replayer = Replayer(workflows=[SessionWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(await handle.fetch_history())


async def test_a_cpu_session_trains_on_the_cpu_queue(temporal_env, queue_prefix):
    client = temporal_env.client
    cpu = worker_train_queues("cpu", queue_prefix)
    async with workers(client, Script(scores=[0.9]), queue_prefix, list(cpu)):
        handle = await start_session(client, queue_prefix, accelerator="cpu", **INPUTS)
        assert (await asyncio.wait_for(handle.result(), timeout=60)).passed
    assert await train_pool_queues(handle) == {cpu[1]}
