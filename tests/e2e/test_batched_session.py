"""A session with two reward candidates trains them together in one process, and a training
worker SIGKILLed mid-batch is replaced: the retried batch resumes every candidate from the
checkpoint in S3 (real Temporal server, S3, sandboxes and PPO; the three pools as OS processes
connected by environment variables only, each doing its own share and stopping on SIGTERM)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from stable_baselines3 import PPO

from activities.artifacts import ArtifactStore
from tests.builders import start_session
from tests.processes import (
    descendants,
    heartbeat_until,
    log_records,
    still_running,
    three_pools,
    worker_env,
)
from workflows.contracts.keys import JUDGMENT

# Slow tier: worker processes, a SIGKILL and the heartbeat timeout it waits out.
pytestmark = pytest.mark.slow

CHECKPOINT_EVERY = 2048
TIMESTEPS = 8192


def logged_activities(path: Path) -> set[str]:
    """The activities a worker's JSON log lines name."""
    return {r["activity"] for r in log_records(path) if "activity" in r}


def _batch_checkpoint(details: dict) -> int | None:
    """The batch's checkpoint step once every group of the batch has one."""
    steps = [g.get("checkpoint_timesteps") for g in details["groups"].values()]
    return min(steps) if steps and all(steps) else None


async def test_candidates_train_batched_and_resume_after_sigkill(
    temporal_env, s3, queue_prefix, tmp_path: Path
):
    env = worker_env(temporal_env, queue_prefix, CHECKPOINT_EVERY)
    with three_pools(env, tmp_path) as pools:
        handle = await start_session(
            temporal_env.client,
            queue_prefix,
            # Hopper: its early episodes end within a few dozen steps, so every candidate has
            # finished episodes (a training return) on both sides of the kill.
            prompt="hop forward",
            env_id="Hopper-v5",
            total_timesteps=TIMESTEPS,
            max_iterations=1,
            candidates=2,
            eval_max_steps=30,
        )
        killed_at = await heartbeat_until(handle, "train_batch", _batch_checkpoint, timeout=180)
        assert CHECKPOINT_EVERY <= killed_at < TIMESTEPS
        family = descendants(pools.train.pid)  # its runner template and the batch's child
        assert family
        pools.replace_train()
        result = await asyncio.wait_for(handle.result(), timeout=420)
        # The pools stop cleanly on SIGTERM, as compose and systemd stop them.
        assert pools.terminate() == [0, 0, 0]
    log = pools.log("train")

    record = result.iterations[0]
    assert record.batched and record.candidates == 2 and record.runs == 2
    assert sorted(r.candidate for r in record.run_results) == [0, 1]
    assert all(r.mean_return is not None and 0 <= r.score <= 1 for r in record.run_results)
    store = ArtifactStore()
    prefixes = {f"sessions/{result.session_id}/iter_1/c{k}_default_seed_0/" for k in range(2)}
    for prefix in prefixes:
        summary = json.loads(store.get_text(prefix + "summary.json"))
        # Every member continued its counter from the batch's checkpoint, not from zero.
        assert killed_at <= summary["resumed_from_timesteps"] < TIMESTEPS
        assert summary["timesteps_done"] >= TIMESTEPS
        assert summary["batch"]["members"] == sorted(p.rstrip("/").split("/")[-1] for p in prefixes)
        assert store.exists(prefix + "trajectories/eval.npz")  # evaluated and judged
        # Every member has a single run's evaluation checkpoints, those kept before the kill
        # and after it, each judged.
        for pct in (25, 50, 75, 100):
            folder = f"{prefix}evals/pct_{pct}/"
            kept = json.loads(store.get_text(folder + "returns.json"))
            assert len(kept["returns"]) == 5 and kept["timesteps"] >= pct * TIMESTEPS // 100
            for pick in ("p10", "median", "p90"):
                assert store.exists(folder + f"{pick}.mp4") and store.exists(folder + f"{pick}.npz")
        judged = json.loads(store.get_text(prefix + JUDGMENT))
        assert sorted(judged["checkpoints"], key=int) == ["25", "50", "75", "100"]
    assert "resuming" in log.read_text()
    # Each pool did its own share of the work, and only that: the processes are connected by
    # environment variables alone (the deployment's topology without Docker).
    shares = {
        "llm": {"author_reward", "revise_reward"},
        "train": {"validate_reward", "train_batch", "evaluate_policy"},
        "judge": {"judge_rollout", "record_lesson"},
    }
    for pool, share in shares.items():
        done = logged_activities(tmp_path / f"{pool}-worker.log")
        assert done and done <= share, (pool, done)
    # The best run's model is a plain Stable-Baselines3 model.
    best = result.best.best_run
    assert best.run_prefix in prefixes
    model = PPO.load(io.BytesIO(store.get_bytes(best.model_key)), device="cpu")
    assert model.policy.action_space.shape == (3,)
    # The killed worker's template and training child died with it.
    assert still_running(family) == []
