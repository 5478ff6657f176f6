"""Training workers by kind: a GPU worker (`policyforge worker train --gpu`) refuses to start
without CUDA, in one line; a train worker polls the shared queue and its kind's within one set
of slots; and a session that asks for a GPU says it waits for one, then trains to the end on
the first GPU-queue worker that comes (here on CPU: POLICYFORGE_TRAIN_DEVICE=cpu)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.client import Client

from tests.builders import start_session
from tests.workflows.test_accelerator import train_pool_queues
from workers.cli.sessions import show_status, waiting_for_worker
from workers.pools.pools import SharedSlots, run_pools, train_workers
from workers.settings import Settings
from workflows.contracts.queues import train_queue
from workflows.contracts.session import SessionResult, SessionStatus


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`policyforge ARGS` in a process of its own, with no CUDA device and no GPU setting;
    a server nobody answers at, so a start that was not refused fails fast instead of hanging."""
    environ = {k: v for k, v in os.environ.items() if k != "POLICYFORGE_TRAIN_DEVICE"}
    environ.update(CUDA_VISIBLE_DEVICES="", TEMPORAL_ADDRESS="127.0.0.1:1", **env)
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )


def test_a_gpu_worker_without_cuda_refuses_in_one_line():
    ended = _cli("worker", "train", "--gpu")
    assert ended.returncode == 1
    (line,) = ended.stderr.strip().splitlines()
    assert line.startswith("error: worker train --gpu: torch ")
    assert "torch.cuda.is_available() is False" in line and "POLICYFORGE_TRAIN_DEVICE" in line


def test_gpu_is_for_the_train_pool():
    ended = _cli("worker", "llm", "--gpu")
    assert ended.returncode == 1
    assert (
        ended.stderr.strip() == "error: --gpu is for the train pool: policyforge worker train --gpu"
    )


async def test_a_train_worker_polls_the_shared_queue_and_its_kinds(temporal_env):
    # Its own client: workers made and never run stay registered with the client they got.
    client = await Client.connect(temporal_env.client.service_client.config.target_host)
    cpu = train_workers(client, Settings(queue_prefix="pf-c", train_concurrency=2))
    gpu = train_workers(client, Settings(queue_prefix="pf-g", train_concurrency=2), "gpu")
    assert [w.task_queue for w in cpu] == ["pf-c-train", "pf-c-train-cpu"]
    assert [w.task_queue for w in gpu] == ["pf-g-train", "pf-g-train-gpu"]


def test_run_and_bench_take_the_accelerator():
    from workers.cli.main import _parser, session_input

    args = _parser().parse_args(["run", "go", "--env", "HalfCheetah-v5", "--accelerator", "gpu"])
    assert session_input(args)["accelerator"] == "gpu"
    args = _parser().parse_args(["run", "go", "--env", "HalfCheetah-v5"])
    assert "accelerator" not in session_input(args)  # the session's default: any
    args = _parser().parse_args(["bench", "cases.csv", "--accelerator", "cpu"])
    assert args.accelerator == "cpu"


def _pending(queue: str) -> Any:
    """A session's description with one activity the server holds for a worker of `queue`."""
    from temporalio.api.enums.v1 import PendingActivityState
    from temporalio.api.workflow.v1 import PendingActivityInfo

    info = PendingActivityInfo(state=PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED)
    info.activity_options.task_queue.name = queue
    return SimpleNamespace(raw_description=SimpleNamespace(pending_activities=[info]))


async def test_a_status_whose_queue_cannot_be_asked_says_unknown():
    class Unreachable:
        namespace = "default"

        class workflow_service:  # noqa: N801 - the client's attribute
            @staticmethod
            async def describe_task_queue(*_: Any, **__: Any) -> Any:
                raise RuntimeError("connection refused")

    line = await waiting_for_worker(Unreachable(), _pending("pf-train-gpu"))  # type: ignore[arg-type]
    assert line == (
        "waiting on queue pf-train-gpu: whether a worker polls it is unknown (connection refused)"
    )


def test_status_prints_what_the_session_waits_for():
    from rich.console import Console

    from workers.cli.render import print_status

    status = SessionStatus(
        session_id="s",
        prompt="go",
        env_id="HalfCheetah-v5",
        model_label="offline (no LLM)",
        stage="validating",
        iteration=1,
        max_iterations=3,
        timesteps_done=0,
        timesteps_target=1000,
        best_score=None,
        best_iteration=None,
        accelerator="gpu",
        train_queue="pf-train-gpu",
    )
    console = Console(record=True, width=200)
    print_status(console, "s", None, status, "http://ui")
    assert "trains on queue pf-train-gpu (gpu workers)" in console.export_text()
    waiting = "waiting for a GPU training worker (no worker polls queue pf-train-gpu)"
    console = Console(record=True, width=200)
    print_status(console, "s", None, status.model_copy(update={"waiting": waiting}), "http://ui")
    assert f"  {waiting}\n" in console.export_text()


@dataclass
class _Ctx:
    permit: Any
    slot_info: Any = None


async def test_shared_slots_hold_the_limit_across_queues():
    slots = SharedSlots(2)
    first = await slots.reserve_slot(None)  # type: ignore[arg-type]
    second = await slots.reserve_slot(None)  # type: ignore[arg-type]
    # Polls wait on no slot until tasks run in them: both queues stay polled.
    idle = await slots.reserve_slot(None)  # type: ignore[arg-type]
    slots.release_slot(_Ctx(idle))  # a poll that ended without a task
    for permit in (first, second):
        slots.mark_slot_used(_Ctx(permit))
    assert slots.running == 2
    waiting = asyncio.ensure_future(slots.reserve_slot(None))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    assert not waiting.done(), "a third poll must wait while two activities run"
    slots.release_slot(_Ctx(first))
    third = await asyncio.wait_for(waiting, timeout=5)
    assert slots.running == 1 and third is not None
    assert slots.try_reserve_slot(None) is None  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def pools(
    client: Client, prefix: str, names: list[str], gpu: bool = False
) -> AsyncIterator[None]:
    """The named pools in this process while the block runs, as `policyforge worker` runs them."""
    settings = Settings(queue_prefix=prefix, train_concurrency=2)
    task = asyncio.create_task(run_pools(client, settings, names, handle_signals=False, gpu=gpu))
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _status(session_id: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """What `policyforge status ID --json` prints (after the log lines of the pools that run
    in this process)."""
    await show_status(session_id, as_json=True)
    lines = capsys.readouterr().out.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    answer: dict[str, Any] = json.loads("\n".join(lines[start:]))
    return answer


@pytest.mark.slow  # real training on a worker that starts late
async def test_a_gpu_session_waits_for_a_gpu_worker_then_trains_on_it(
    temporal_env, s3, queue_prefix, monkeypatch, capsys
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_env.client.service_client.config.target_host)
    monkeypatch.setenv("POLICYFORGE_QUEUE_PREFIX", queue_prefix)
    monkeypatch.delenv("TEMPORAL_PROFILE", raising=False)
    # The device the person chose for the GPU queue: this machine's CPU.
    monkeypatch.setenv("POLICYFORGE_TRAIN_DEVICE", "cpu")
    client = temporal_env.client
    gpu = train_queue("gpu", queue_prefix)
    async with pools(client, queue_prefix, ["llm", "judge"]):
        handle = await start_session(
            client,
            queue_prefix,
            prompt="run forward as fast as possible",
            env_id="HalfCheetah-v5",
            total_timesteps=2048,
            max_iterations=1,
            eval_max_steps=40,
            accelerator="gpu",
        )
        for _ in range(600):
            status = await _status(handle.id, capsys)
            if status.get("waiting"):
                break
            await asyncio.sleep(0.1)
        assert (
            status["waiting"] == f"waiting for a GPU training worker (no worker polls queue {gpu})"
        )
        assert status["train_queue"] == gpu

        async with pools(client, queue_prefix, ["train"], gpu=True):
            result = await asyncio.wait_for(handle.result(), timeout=600)
        assert isinstance(result, SessionResult) and len(result.iterations) == 1
        assert result.best is not None and result.best.best_run.timesteps_done >= 2048
        assert await train_pool_queues(handle) == {gpu}
        done = await _status(handle.id, capsys)
    assert done["session_id"] == handle.id and done.get("waiting") is None
