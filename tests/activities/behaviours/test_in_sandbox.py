"""A reward written with the primitives, as an LLM would write it, through the real activities:
validated and trained in the sandbox process (with foot readings added because it reads them),
evaluated, and judged with metrics that mean the same as its terms."""

from __future__ import annotations

import io
import uuid

import numpy as np
import pytest
from temporalio.testing import ActivityEnvironment

import activities.behaviours.primitives as P
from activities.artifacts import ArtifactStore
from activities.behaviours.metrics import Trajectory, compute
from activities.training.evaluate_activity import evaluate_policy
from activities.training.train_activity import train_policy
from activities.training.validate_activities import validate_reward
from workflows.contracts.training import EvalRequest, TrainRequest, ValidateRequest

ENV = "Hopper-v5"
REWARD = """
import primitives as P

ENV = "Hopper-v5"


class HopInPlace(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        terms = {
            "still": P.still_reward(ENV, info, margin=0.5),
            "upright": 0.5 * P.upright_reward(ENV, info),
            "airborne": 0.5 * P.contact_reward(ENV, info, 0.0),
            "ctrl": -0.001 * P.control_cost(action),
        }
        return float(sum(terms.values())), terms

    @property
    def latex(self):
        return r"r = s + 0.5 u + 0.5 a - 0.001 |a|^2"

    @property
    def terms(self):
        return ["still", "upright", "airborne", "ctrl"]
"""


async def test_a_primitives_reward_trains_and_is_judged_by_the_same_measures(s3):
    sid = f"t-{uuid.uuid4().hex[:8]}"
    store = ArtifactStore()
    store.ensure_bucket()
    key = store.put_text(f"sessions/{sid}/iter_1/reward_fn.py", REWARD)
    env = ActivityEnvironment()

    check = await env.run(validate_reward, ValidateRequest(env_id=ENV, reward_key=key, steps=32))
    assert check.ok, check.error
    assert set(check.term_magnitudes) == {"still", "upright", "airborne", "ctrl"}

    trained = await env.run(
        train_policy,
        TrainRequest(
            session_id=sid,
            iteration=1,
            run_name="c0_default_seed_0",
            env_id=ENV,
            reward_key=key,
            timesteps=2048,
            eval_max_steps=60,  # short evaluation checkpoints: this test reads the terms
        ),
    )
    assert trained.timesteps_done >= 2048
    assert set(trained.term_means) >= {"still", "upright", "airborne"}
    assert 0.0 <= trained.term_means["airborne"] <= 0.5

    evaluated = await env.run(
        evaluate_policy,
        EvalRequest(
            env_id=ENV,
            reward_key=key,
            run_prefix=trained.run_prefix,
            model_key=trained.model_key,
            vecnormalize_key=trained.vecnormalize_key,
            max_steps=60,
            record_video=False,
        ),
    )
    raw = store.get_bytes(evaluated.trajectory_key)
    with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
        data = {k: npz[k] for k in npz.files}
    n = len(data["action"])
    assert data["feet_z"].shape == (n, 1) and data["feet_contact"].shape == (n, 1)
    assert data["knees_z"].shape == (n, 1)
    # The reward's terms, computed in the sandbox step by step, are the primitives over the
    # recorded trajectory: one meaning on both sides.
    assert data["term_airborne"] == pytest.approx(0.5 * P.contact_reward(ENV, data, 0.0))
    assert data["term_upright"] == pytest.approx(0.5 * P.upright_reward(ENV, data))
    t = Trajectory.load(raw, ENV)
    flight = compute(t, "flight_fraction")
    assert flight == pytest.approx(float(np.mean(data["feet_contact"][:, 0] == 0)))
    assert compute(t, "mean_uprightness") == pytest.approx(float(np.mean(P.uprightness(ENV, data))))
