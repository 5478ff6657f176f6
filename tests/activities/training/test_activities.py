"""The Temporal activities with a real S3 (SeaweedFS), without a server (ActivityEnvironment)."""

from __future__ import annotations

import io
import json
import uuid

import av
import numpy as np
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.artifacts import ArtifactStore
from activities.training.evaluate_activity import evaluate_policy
from activities.training.train_activity import train_policy
from activities.training.validate_activities import validate_reward
from workflows.contracts.keys import run_prefix
from workflows.contracts.training import EvalRequest, TrainProgress, TrainRequest, ValidateRequest

from .rewards import RAISES_LINE_7, RUN_FORWARD

ENV = "HalfCheetah-v5"


def _put_reward(source: str) -> tuple[str, str]:
    sid = f"t-{uuid.uuid4().hex[:8]}"
    store = ArtifactStore()
    store.ensure_bucket()
    return sid, store.put_text(f"sessions/{sid}/iter_1/reward_fn.py", source)


async def test_validate_train_evaluate_through_s3(s3):
    sid, key = _put_reward(RUN_FORWARD)
    env = ActivityEnvironment()
    heartbeats: list = []
    env.on_heartbeat = lambda *details: heartbeats.append(details)

    check = await env.run(validate_reward, ValidateRequest(env_id=ENV, reward_key=key, steps=16))
    assert check.ok and check.steps == 16 and set(check.term_magnitudes) == {"forward", "ctrl"}

    trained = await env.run(
        train_policy,
        TrainRequest(
            session_id=sid,
            iteration=1,
            run_name="c0_default_seed_0",
            env_id=ENV,
            reward_key=key,
            timesteps=2048,
            eval_max_steps=10,
            final_eval=True,
        ),
    )
    prefix = run_prefix(sid, 1, "c0_default_seed_0")
    assert trained.run_prefix == prefix and trained.timesteps_done >= 2048
    assert trained.model_key == prefix + "model.zip" and trained.wall_seconds > 0
    store = ArtifactStore()
    for name in ("model.zip", "vecnormalize.npz", "metrics/scalars.jsonl", "summary.json"):
        assert store.exists(prefix + name), name
    assert json.loads(store.get_text(prefix + "summary.json"))["env_id"] == ENV
    progress = [d[0] for d in heartbeats if d and isinstance(d[0], TrainProgress)]
    assert progress and max(p.timesteps for p in progress) >= 2048
    # The evaluation checkpoint (one: training is a single rollout), kept beside training.
    for name in ("returns.json", "median.npz", "median.mp4", "model.zip"):
        assert store.exists(f"{prefix}evals/pct_100/{name}"), name
    assert not store.list_keys(prefix + "handoff/")
    # The final evaluation came with the result: its trajectory and a video of every step.
    final = trained.final_eval
    assert final is not None and final.episode_length == 10
    assert final.trajectory_key == prefix + "trajectories/eval.npz"
    assert final.video_key == prefix + "videos/eval.mp4"
    with av.open(io.BytesIO(store.get_bytes(final.video_key))) as video:
        assert sum(1 for _ in video.decode(video=0)) == 1 + 10
    assert trained.eval_work_seconds > 0

    evaluated = await env.run(
        evaluate_policy,
        EvalRequest(
            env_id=ENV,
            reward_key=key,
            run_prefix=trained.run_prefix,
            model_key=trained.model_key,
            vecnormalize_key=trained.vecnormalize_key,
            max_steps=10,
            record_video=False,
        ),
    )
    assert evaluated.video_key is None and evaluated.episode_length == 10
    # evaluate_policy plays the same episode as the one train_policy carried.
    assert evaluated.episode_return == pytest.approx(final.episode_return)
    assert evaluated.env_return == pytest.approx(final.env_return)
    assert evaluated.trajectory_key == prefix + "trajectories/eval.npz"
    with np.load(io.BytesIO(store.get_bytes(evaluated.trajectory_key)), allow_pickle=False) as npz:
        assert npz["action"].shape == (10, 6)
        assert evaluated.episode_return == pytest.approx(float(npz["reward"].sum()))


async def test_reward_failures(s3):
    sid, key = _put_reward(RAISES_LINE_7)
    env = ActivityEnvironment()
    check = await env.run(validate_reward, ValidateRequest(env_id=ENV, reward_key=key, steps=4))
    assert not check.ok and check.error.startswith("reward_fn.py line 7: ZeroDivisionError")

    with pytest.raises(ApplicationError) as err:
        await env.run(
            train_policy,
            TrainRequest(
                session_id=sid,
                iteration=1,
                run_name="r",
                env_id=ENV,
                reward_key=key,
                timesteps=1024,
            ),
        )
    assert err.value.type == "RewardRuntimeError" and err.value.non_retryable
    assert err.value.message.startswith("reward_fn.py line 7: ZeroDivisionError")

    with pytest.raises(ApplicationError) as missing:
        await env.run(
            validate_reward, ValidateRequest(env_id=ENV, reward_key=f"sessions/{sid}/nope.py")
        )
    assert missing.value.type == "ArtifactMissing" and missing.value.non_retryable


# Sound while training samples its actions; once an episode acts as a deterministic policy
# does (five steps in a row with every action small: an untrained policy's mean), it returns a
# term name that prints as "forward" with a variation selector, which the trusted side refuses.
SOUND_IN_TRAINING_ONLY = """
class Forward(RewardFunction):
    def __init__(self):
        self.calm = 0

    def compute(self, obs, action, next_obs, info):
        self.calm = self.calm + 1 if max(abs(float(a)) for a in action) < 0.5 else 0
        name = "forward\\ufe0f" if self.calm >= 5 else "forward"
        return float(info["x_velocity"]), {name: float(info["x_velocity"])}
"""


async def test_a_reward_failing_when_evaluated_keeps_the_trained_model(s3):
    """Issue 42: a name from the sandbox that fails only in evaluation is the reward's error,
    for the fixer, and what was trained is kept (it once failed the run as the worker's)."""
    sid, key = _put_reward(SOUND_IN_TRAINING_ONLY)
    env = ActivityEnvironment()
    check = await env.run(validate_reward, ValidateRequest(env_id=ENV, reward_key=key, steps=64))
    assert check.ok, check.error
    with pytest.raises(ApplicationError) as err:
        await env.run(
            train_policy,
            TrainRequest(
                session_id=sid,
                iteration=1,
                run_name="c0_default_seed_0",
                env_id=ENV,
                reward_key=key,
                timesteps=2048,
                eval_max_steps=10,
                final_eval=True,
            ),
        )
    assert err.value.type == "RewardRuntimeError" and err.value.non_retryable
    assert "print as something else" in err.value.message
    kept = err.value.message.rsplit(" kept at ", 1)[-1]
    assert kept.startswith(run_prefix(sid, 1, "c0_default_seed_0")), err.value.message
    store = ArtifactStore()
    assert store.exists(kept) or store.list_keys(kept), kept
