"""A session whose run stops training once an evaluation checkpoint passes the judge."""

from __future__ import annotations

import asyncio
import json

import pytest

from activities.artifacts import ArtifactStore
from tests.builders import all_pools, start_session

BUDGET = 200_000
MIN_STEPS = 20_000


@pytest.mark.slow  # a real session that trains until a checkpoint passes (about 30 s)
async def test_a_session_stops_training_at_the_checkpoint_that_passes(
    temporal_env, s3, queue_prefix
):
    async with all_pools(temporal_env.client, queue_prefix):
        # PPO balances the pole within about 25k steps: a checkpoint kept from the minimum in
        # steps on (20k, 40k), long before a quarter of the budget, passes and stops the run.
        handle = await start_session(
            temporal_env.client,
            queue_prefix,
            prompt="keep the pole balanced",
            env_id="InvertedPendulum-v5",
            total_timesteps=BUDGET,
            max_iterations=1,
            eval_max_steps=300,
            min_training_steps=MIN_STEPS,
        )
        result = await asyncio.wait_for(handle.result(), timeout=600)

    assert result.passed, result.iterations[-1].diagnosis
    [record] = result.iterations
    # The record says what was budgeted, what was used and which checkpoint stopped it.
    assert record.timesteps == BUDGET
    assert record.stopped_at_pct in (10, 20, 25, 50), record.stopped_at_pct
    assert record.timesteps_used is not None
    assert MIN_STEPS <= record.stopped_at_pct / 100 * BUDGET <= record.timesteps_used < BUDGET
    # The run's policy is the checkpoint the judge passed (not the one the updates while it
    # was judged left), and the final evaluation judged that policy again.
    store = ArtifactStore()
    run = record.best_run
    summary = json.loads(store.get_text(run.run_prefix + "summary.json"))
    assert summary["timesteps_done"] == record.timesteps_used and summary["timesteps"] == BUDGET
    assert summary["policy_from_pct"] == record.stopped_at_pct
    kept = f"{run.run_prefix}evals/pct_{record.stopped_at_pct}/"
    for name in ("model.zip", "vecnormalize.npz"):
        assert store.get_bytes(run.run_prefix + name) == store.get_bytes(kept + name), name
    judgment = json.loads(store.get_text(run.run_prefix + "judgment.json"))
    assert judgment["passed"]
