"""The training child and the evaluator beside it (side_eval.py), run together by train_policy.

Training hands each evaluation checkpoint over and goes on; the evaluator keeps it on the other
core and, once training is over, plays the final evaluation episode. Only what the evaluator
still does after training ended is time the session waits for evaluation (`waited_s`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activities.runner.protocol import ChildRequest

Result = dict[str, Any]


@dataclass(frozen=True)
class BesideRun:
    """The training child's summary, the evaluator's result, and how long the evaluator ran on
    after training ended."""

    summary: Result
    evaluation: Result
    waited_s: float


def request(train: ChildRequest, out: Path, *, final_eval: bool) -> ChildRequest:
    """The evaluator's request beside `train`, whose output folder is `out`: the same env,
    reward (or batch members' rewards), seed, algorithm and episode cap."""
    return ChildRequest(
        env_id=train.env_id,
        reward_source=train.reward_source,
        reward_path=train.reward_path,
        reward_filename=train.reward_filename,
        reward_shaping=train.reward_shaping,
        members=train.members,
        seed=train.seed,
        env_kwargs=train.env_kwargs,
        algo=train.algo,
        eval_checkpoint_episodes=train.eval_checkpoint_episodes,
        max_steps=train.max_steps,
        watch_dir=str(out),
        final_eval=final_eval,
    )


async def train_beside(
    train: Coroutine[Any, Any, Result], evaluate: Coroutine[Any, Any, Result]
) -> BesideRun:
    """Run both children to the end; the first failure (training's first) stops the other
    (cancelling a child kills it) and is raised."""
    train_task = asyncio.create_task(train)
    eval_task = asyncio.create_task(evaluate)
    ended: list[float] = []
    train_task.add_done_callback(lambda _: ended.append(time.monotonic()))
    tasks = {train_task, eval_task}
    try:
        # Returns at the first failure, else when both have finished.
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in (train_task, eval_task):
            error = task.exception() if task.done() else None
            if error is not None:
                raise error
        return BesideRun(train_task.result(), eval_task.result(), time.monotonic() - ended[0])
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
