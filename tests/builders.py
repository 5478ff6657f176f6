"""Test data that several test modules build: a reward module's source, a run's record, and a
session started on the worker pools' task queues."""

from __future__ import annotations

import asyncio
import contextlib
import io
import uuid
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
from temporalio.client import Client, WorkflowHandle

from workers.pools.pools import run_pools
from workers.settings import Settings
from workflows.contracts.keys import run_prefix
from workflows.contracts.queues import task_queue
from workflows.contracts.session import RunRecord, SessionResult
from workflows.session import SessionWorkflow

# A reward module as the LLM agents write one: forward speed minus a control cost, with its LaTeX
# and its terms. Tests derive their revisions from it with str.replace.
FORWARD_REWARD = """import numpy as np


class RunForward(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        terms = {
            "forward": float(np.clip(info["x_velocity"], -10.0, 10.0)),
            "ctrl": -0.1 * float(np.sum(np.square(action))),
        }
        return sum(terms.values()), terms

    @property
    def latex(self):
        return r"r = v_x - 0.1 \\|a\\|^2"

    @property
    def terms(self):
        return ["forward", "ctrl"]
"""

RUN_NAME = "c0_default_seed_0"


def run_record(
    session_id: str, iteration: int, *, timesteps_done: int, score: float, passed: bool = False
) -> RunRecord:
    """An iteration's first run, its files named where training and evaluation put them."""
    prefix = run_prefix(session_id, iteration, RUN_NAME)
    return RunRecord(
        run_name=RUN_NAME,
        seed=0,
        run_prefix=prefix,
        model_key=prefix + "model.zip",
        vecnormalize_key=prefix + "vecnormalize.npz",
        video_key=prefix + "videos/eval.mp4",
        trajectory_key=prefix + "trajectories/eval.npz",
        timesteps_done=timesteps_done,
        score=score,
        passed=passed,
    )


async def start_session(
    client: Client, queue_prefix: str, memo: dict[str, Any] | None = None, **inputs: Any
) -> WorkflowHandle[SessionWorkflow, SessionResult]:
    """A SessionWorkflow started on the llm queue of `queue_prefix`, its pools told that prefix."""
    return await client.start_workflow(
        SessionWorkflow.run,
        {**inputs, "queue_prefix": queue_prefix},
        id=f"{queue_prefix}-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue("llm", queue_prefix),
        result_type=SessionResult,
        memo=memo,
    )


@contextlib.asynccontextmanager
async def all_pools(client: Client, queue_prefix: str) -> AsyncIterator[None]:
    """The three worker pools (llm, train, judge) on `queue_prefix`'s queues while the block
    runs, two training slots, as `policyforge worker` runs them; cancelled after."""
    settings = Settings(queue_prefix=queue_prefix, train_concurrency=2)
    pools = asyncio.create_task(
        run_pools(client, settings, ["llm", "train", "judge"], handle_signals=False)
    )
    try:
        yield
    finally:
        pools.cancel()
        await asyncio.gather(pools, return_exceptions=True)


def cheetah_trajectory(vx: float, steps: int = 20) -> bytes:
    """An evaluation episode's npz as the judges read it: a HalfCheetah-sized body standing
    still in its joints while its forward velocity reads `vx` throughout."""
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        action=np.zeros((steps, 6)),
        qpos=np.zeros((steps, 9)),
        qvel=np.zeros((steps, 9)),
        terminated=np.zeros(steps, dtype=bool),
        info_x_velocity=np.full(steps, vx),
        meta_dt=np.array(0.05),
    )
    return buf.getvalue()
