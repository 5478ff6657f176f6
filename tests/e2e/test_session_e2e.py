"""A real session: real worker pools, real SeaweedFS, real PPO on real MuJoCo (few k steps)."""

from __future__ import annotations

import asyncio
import io
import json

import av
import numpy as np
import pytest

from activities.artifacts import ArtifactStore
from activities.envs.catalog import facts
from tests.builders import all_pools, start_session
from workflows.contracts.session import SessionStatus
from workflows.session import SessionWorkflow

EVAL_STEPS = 40


async def test_real_session_produces_video_and_trajectory_in_s3(temporal_env, s3, queue_prefix):
    async with all_pools(temporal_env.client, queue_prefix):
        handle = await start_session(
            temporal_env.client,
            queue_prefix,
            prompt="run forward as fast as possible",
            env_id="HalfCheetah-v5",
            total_timesteps=2048,
            max_iterations=2,
            # A few thousand steps cannot pass: the second iteration runs a revised reward.
            pass_threshold=1.0,
            eval_max_steps=EVAL_STEPS,
            # Iteration 2 runs in a second workflow run (continue-as-new), revising the reward
            # carried over from the first.
            iterations_per_run=1,
        )
        result = await asyncio.wait_for(handle.result(), timeout=600)
        status = await handle.query(SessionWorkflow.status)

    assert isinstance(status, SessionStatus) and status.stage == "done" and status.runs == 2
    assert result.model_label == "offline (no LLM)"
    assert len(result.iterations) == 2 and not result.passed
    first, second = result.iterations
    assert second.changes, "the reviser must say what it changed"
    store = ArtifactStore()
    assert store.get_text(first.reward_key) != store.get_text(second.reward_key)

    run = result.best.best_run
    assert run.timesteps_done >= 2048
    for key in (run.model_key, run.vecnormalize_key, run.run_prefix + "summary.json"):
        assert store.exists(key), key
    # The judge also scored the evaluation checkpoints. A 2048-step run has one PPO update, so
    # only the 100% point exists (the others fall between updates).
    judgment = json.loads(store.get_text(run.run_prefix + "judgment.json"))
    assert list(judgment["checkpoints"]) == ["100"]
    for pct in judgment["checkpoints"]:
        for name in ("p10", "median", "p90"):
            assert store.exists(f"{run.run_prefix}evals/pct_{pct}/{name}.mp4")

    # The video decodes to frames.
    assert run.video_key and run.video_key.endswith(".mp4")
    with av.open(io.BytesIO(store.get_bytes(run.video_key))) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) >= EVAL_STEPS // 2
    assert frames[0].ndim == 3 and frames[0].shape[2] == 3 and frames[0].std() > 0

    # The trajectory holds the expected per-step arrays.
    spec = facts("HalfCheetah-v5")
    with np.load(io.BytesIO(store.get_bytes(run.trajectory_key)), allow_pickle=False) as npz:
        steps = len(npz["action"])
        assert steps == EVAL_STEPS
        assert npz["obs"].shape == (steps, spec.obs_dim)
        assert npz["action"].shape == (steps, spec.act_dim)
        assert npz["qpos"].shape == (steps, spec.nq) and npz["qvel"].shape == (steps, spec.nv)
        assert npz["info_x_velocity"].shape == (steps,)
        terms = [k for k in npz.files if k.startswith("term_")]
        assert terms
        np.testing.assert_allclose(sum(npz[k] for k in terms), npz["reward"], rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # a real session
async def test_an_offline_sequence_is_judged_by_the_offline_authors_judge_code(
    temporal_env, s3, queue_prefix
):
    # "then" makes two phases; no built-in metric measures each phase, so the offline author
    # writes judge code, which the session validates and judges with instead of failing.
    async with all_pools(temporal_env.client, queue_prefix):
        handle = await start_session(
            temporal_env.client,
            queue_prefix,
            prompt="run forward, then stop",
            env_id="HalfCheetah-v5",
            total_timesteps=2048,
            max_iterations=1,
            eval_max_steps=EVAL_STEPS,
        )
        result = await asyncio.wait_for(handle.result(), timeout=600)
    (record,) = result.iterations
    judgment = json.loads(ArtifactStore().get_text(record.best_run.run_prefix + "judgment.json"))
    names = {c["name"] for c in judgment["criteria"]}
    assert {"moves_forward_in_run", "comes_to_rest_in_rest"} <= names
    assert ArtifactStore().exists(f"sessions/{handle.id}/judge_fn.py")
