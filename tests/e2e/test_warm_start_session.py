"""A revision starts from the previous iteration's policy on the engine, and a training worker
SIGKILLed during that revision is replaced: the retry resumes the warm-started run from its
checkpoint in S3, not from the previous policy again (real Temporal server, S3, sandboxes and
PPO; the pools as OS processes)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from tests.builders import start_session
from tests.processes import heartbeat_until, log_records, three_pools, worker_env

# Slow tier: two iterations of training, a SIGKILL and the heartbeat timeout it waits out.
pytestmark = pytest.mark.slow

CHECKPOINT_EVERY = 2048
# Long enough that iteration 2 (1.5x this) is still training when its first checkpoint's
# heartbeat reaches the server (the worker throttles heartbeats to one per 5 s): an idle
# machine trains 12k Hopper steps in about 3 s.
TIMESTEPS = 32_768


def _revision_checkpoint(details: dict) -> int | None:
    """The checkpoint step of the running training once it is iteration 2's."""
    key = details.get("checkpoint_key") or ""
    return details.get("checkpoint_timesteps") if "/iter_2/" in key else None


def _warm_start_logs(path: Path) -> list[dict]:
    return [r for r in log_records(path) if r.get("event") == "warm start"]


async def test_a_revision_warm_starts_on_the_engine_and_resumes_after_sigkill(
    temporal_env, s3, queue_prefix, tmp_path: Path
):
    env = worker_env(temporal_env, queue_prefix, CHECKPOINT_EVERY)
    with three_pools(env, tmp_path) as pools:
        handle = await start_session(
            temporal_env.client,
            queue_prefix,
            # 33k steps of Hopper never hop at 3 m/s: the session revises once.
            prompt="hop forward at 3 m/s",
            env_id="Hopper-v5",
            total_timesteps=TIMESTEPS,
            max_iterations=2,
            warm_start=True,
            eval_max_steps=30,
        )
        killed_at = await heartbeat_until(handle, "train_policy", _revision_checkpoint, 300)
        assert killed_at >= CHECKPOINT_EVERY
        pools.replace_train()
        result = await asyncio.wait_for(handle.result(), timeout=420)
    log = pools.log("train")

    assert len(result.iterations) == 2
    first_best = result.iterations[0].best_run
    store = ArtifactStore()
    revision = result.iterations[1]
    assert revision.runs == 1
    summary = json.loads(store.get_text(revision.best_run.run_prefix + "summary.json"))
    # The revision trained on the engine (its batch record), from iteration 1's policy: the
    # record of the warm start came through the checkpoint the retry resumed from.
    assert summary["batch"]["members"] == ["run"]
    # Kept because the revised reward values what iteration 1's policy does more than what a
    # fresh policy does (both episodes' returns are recorded).
    warm = summary["warm_start"]
    assert warm["applied"] is True and warm["reason"] is None
    assert warm["returns"]["previous"] >= warm["returns"]["fresh"]
    assert killed_at <= summary["resumed_from_timesteps"] < summary["timesteps_done"]
    # The killed worker loaded iteration 1's best policy; the retry loaded none, it resumed.
    started = [r for r in _warm_start_logs(log) if "model" in r]
    assert [r["model"] for r in started] == [first_best.model_key]
    assert [r["applied"] for r in _warm_start_logs(log) if "applied" in r] == [True]
    assert "resuming" in log.read_text()
