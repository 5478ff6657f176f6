"""The code judge on synthetic trajectories and on a real random-policy HalfCheetah rollout."""

from __future__ import annotations

import io
import math

import gymnasium as gym
import mujoco
import numpy as np
import pytest

from activities.behaviours.metrics import METRICS, Trajectory, available_metrics, compute
from activities.envs.catalog import ENVS, facts
from activities.judging.code_judge import criterion_score, judge_trajectory
from activities.llm.offline import OfflineAuthor, match_intent
from activities.training.reward_runtime import RewardWrapper, load_reward
from workflows.contracts.judging import Criterion

# Drop only MuJoCo 4's per-env settotalmass deprecation warning; keep any other.
mujoco.set_mju_user_warning(lambda msg: None if "settotalmass" in msg else print(msg))

RUN_FAST = "run forward as fast as possible"


def npz_bytes(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def synthetic(
    env_id: str,
    steps: int,
    *,
    vx: float = 0.0,
    qpos: np.ndarray | None = None,
    terminated_at: int | None = None,
    terms: dict[str, np.ndarray] | None = None,
) -> bytes:
    f = facts(env_id)
    n = steps if terminated_at is None else terminated_at
    q = np.zeros((n, f.nq)) if qpos is None else qpos[:n]
    if f.height_index is not None and qpos is None and env_id != "HalfCheetah-v5":
        q[:, f.height_index] = 1.25
    if qpos is None and env_id in ("Ant-v5", "Humanoid-v5", "HumanoidStandup-v5"):
        q[:, 3] = 1.0  # identity quaternion
    term = np.zeros(n, dtype=bool)
    if terminated_at is not None:
        term[-1] = True
    arrays = {
        "obs": np.zeros((n, f.obs_dim)),
        "next_obs": np.zeros((n, f.obs_dim)),
        "action": np.zeros((n, f.act_dim)),
        "reward": np.zeros(n),
        "env_reward": np.zeros(n),
        "qpos": q,
        "qvel": np.zeros((n, f.nv)),
        "terminated": term,
        "truncated": np.zeros(n, dtype=bool),
        "info_x_velocity": np.full(n, vx),
        "meta_env_id": np.array(env_id),
        "meta_dt": np.array(f.dt),
    }
    for k, v in (terms or {}).items():
        arrays[f"term_{k}"] = v[:n]
    return npz_bytes(**arrays)


def cheetah_criteria() -> list[Criterion]:
    return match_intent(RUN_FAST, "HalfCheetah-v5").criteria


def test_fast_cheetah_passes():
    j = judge_trajectory(
        synthetic("HalfCheetah-v5", 200, vx=2.4), "HalfCheetah-v5", cheetah_criteria(), 0.8
    )
    assert j.passed and j.score == 1.0 and j.failure_tags == []
    assert j.diagnosis.startswith("All criteria met: mean forward velocity 2.40 m/s")


def test_slow_cheetah_fails_with_numbers_in_the_diagnosis():
    n = 200
    ramp = np.linspace(-0.01, 0.01, n)
    terms = {"forward": 0.4 + ramp, "ctrl": -0.5 + ramp}
    data = synthetic("HalfCheetah-v5", n, vx=0.4, terms=terms)
    j = judge_trajectory(data, "HalfCheetah-v5", cheetah_criteria(), 0.8)
    assert not j.passed
    speed = j.criteria[0]
    assert speed.value == pytest.approx(0.4) and speed.score == pytest.approx(0.2)
    assert j.score == pytest.approx((3 * 0.2 + 1.0) / 4)
    assert "too_slow" in j.failure_tags and "ctrl_cost_dominates" in j.failure_tags
    assert "mean forward velocity 0.40 m/s against a target of at least 2.00 m/s" in (
        j.diagnosis.lower()
    )
    assert "ctrl term" in j.diagnosis
    assert 1 <= j.diagnosis.count(". ") + 1 <= 3


def test_standing_still_barely_moves_and_backwards_is_the_wrong_way():
    j = judge_trajectory(
        synthetic("HalfCheetah-v5", 100, vx=0.01), "HalfCheetah-v5", cheetah_criteria(), 0.8
    )
    assert "barely moves" in j.diagnosis
    j = judge_trajectory(
        synthetic("HalfCheetah-v5", 100, vx=-1.0), "HalfCheetah-v5", cheetah_criteria(), 0.8
    )
    assert "wrong_direction" in j.failure_tags and j.criteria[0].score == 0.0


def test_a_flipped_cheetah_is_not_upright():
    q = np.zeros((100, 9))
    q[:, 2] = math.pi  # on its back
    j = judge_trajectory(
        synthetic("HalfCheetah-v5", 100, vx=3.0, qpos=q), "HalfCheetah-v5", cheetah_criteria(), 0.8
    )
    assert "not_upright" in j.failure_tags and not j.passed


def test_falling_early_is_reported_with_the_step_count():
    criteria = match_intent("hop forward", "Hopper-v5").criteria
    j = judge_trajectory(
        synthetic("Hopper-v5", 1000, vx=1.0, terminated_at=120), "Hopper-v5", criteria, 0.8
    )
    alive = next(c for c in j.criteria if c.metric == "alive_fraction")
    assert alive.value == pytest.approx(0.12)
    assert "falls_early" in j.failure_tags
    assert "ended after 120 of 1000 steps" in j.diagnosis


def test_unknown_metric_is_unmeasurable_not_a_crash():
    bad = Criterion(name="x", description="x", metric="style_points", target=1.0)
    j = judge_trajectory(
        synthetic("HalfCheetah-v5", 50, vx=3.0), "HalfCheetah-v5", [*cheetah_criteria(), bad], 0.8
    )
    assert "unmeasurable_criterion" in j.failure_tags
    assert "unknown metric 'style_points'" in j.diagnosis


@pytest.mark.parametrize(
    ("value", "direction", "target", "tol", "expected"),
    [
        (2.0, "at_least", 2.0, 0.0, 1.0),
        (0.5, "at_least", 2.0, 0.0, 0.25),
        (-1.0, "at_least", 2.0, 0.0, 0.0),
        (0.01, "at_most", 0.02, 0.0, 1.0),
        (0.08, "at_most", 0.02, 0.0, 0.25),
        (1.15, "near", 1.1, 0.08, 1.0),
        (1.26, "near", 1.1, 0.08, 0.5),
        (1.4, "near", 1.1, 0.08, 0.0),
        (float("nan"), "at_least", 1.0, 0.0, 0.0),
    ],
)
def test_criterion_scores(value, direction, target, tol, expected):
    c = Criterion(
        name="c", description="c", metric="m", target=target, direction=direction, tolerance=tol
    )
    assert criterion_score(value, c) == pytest.approx(expected)


def test_yaw_rate_and_pitch_from_quaternions():
    n, dt, rate = 100, facts("Ant-v5").dt, 1.3
    yaw = rate * dt * np.arange(n)
    q = np.zeros((n, 15))
    q[:, 2] = 0.6
    q[:, 3], q[:, 6] = np.cos(yaw / 2), np.sin(yaw / 2)  # rotation about world z
    t = Trajectory.load(synthetic("Ant-v5", n, qpos=q), "Ant-v5")
    assert compute(t, "mean_yaw_rate") == pytest.approx(rate, rel=1e-6)
    assert compute(t, "mean_clockwise_yaw_rate") == pytest.approx(-rate, rel=1e-6)
    pitch = np.zeros((n, 15))
    pitch[:, 3], pitch[:, 5] = np.cos(-0.5), np.sin(-0.5)  # -1 rad about y: nose up by 1 rad
    t = Trajectory.load(synthetic("Ant-v5", n, qpos=pitch), "Ant-v5")
    assert compute(t, "late_torso_pitch_up") == pytest.approx(1.0, abs=1e-6)


def test_reacher_and_pole_metrics():
    n = 50
    data = dict(np.load(io.BytesIO(synthetic("Reacher-v5", n))))
    # Arm straight along +x (fingertip at 0.21 m), the target closing in along x.
    data["qpos"][:, :2] = 0.0
    data["qpos"][:, 2], data["qpos"][:, 3] = 0.21 - np.linspace(0.2, 0.01, n), 0.0
    t = Trajectory.load(npz_bytes(**data), "Reacher-v5")
    assert compute(t, "final_distance_to_target") < 0.03
    assert compute(t, "mean_distance_to_target") == pytest.approx(0.105, abs=1e-3)
    q = np.zeros((30, 3))
    q[:, 1] = 0.1
    t = Trajectory.load(
        synthetic("InvertedDoublePendulum-v5", 1000, qpos=q, terminated_at=30),
        "InvertedDoublePendulum-v5",
    )
    assert compute(t, "mean_abs_pole_angle") == pytest.approx(0.1)
    assert compute(t, "alive_fraction") == pytest.approx(0.03)
    assert compute(t, "upright_fraction") == pytest.approx(0.03)


def test_every_metric_is_declared_for_the_envs_it_supports():
    for env_id in ENVS:
        supported = available_metrics(env_id)
        assert "alive_fraction" in supported
        assert set(supported) <= set(METRICS)


def random_rollout(env_id: str, prompt: str, seed: int = 0) -> bytes:
    """A random-policy episode recorded in the rollout's trajectory format."""
    reward = load_reward(OfflineAuthor().author(prompt, env_id).reward.code)
    env = RewardWrapper(gym.make(env_id), reward)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    rows: dict[str, list] = {}
    while True:
        action = env.action_space.sample()
        nxt, rew, terminated, truncated, info = env.step(action)
        row = {
            "obs": obs,
            "next_obs": nxt,
            "action": action,
            "reward": rew,
            "env_reward": info["env_reward"],
            "qpos": info["qpos"],
            "qvel": info["qvel"],
            "terminated": terminated,
            "truncated": truncated,
            **{f"term_{k}": v for k, v in info["reward_terms"].items()},
            **{
                f"info_{k}": float(v)
                for k, v in info.items()
                if isinstance(v, float | int | np.floating) and k != "env_reward"
            },
        }
        for k, v in row.items():
            rows.setdefault(k, []).append(v)
        obs = nxt
        if terminated or truncated:
            break
    env.close()
    arrays = {k: np.asarray(v) for k, v in rows.items()}
    return npz_bytes(**arrays, meta_env_id=np.array(env_id), meta_dt=np.array(facts(env_id).dt))


def test_random_halfcheetah_policy_scores_low(tmp_path):
    path = tmp_path / "eval.npz"
    path.write_bytes(random_rollout("HalfCheetah-v5", RUN_FAST))
    j = judge_trajectory(path, "HalfCheetah-v5", cheetah_criteria(), 0.8)
    assert len(np.load(path)["action"]) == 1000
    assert not j.passed and j.score < 0.35
    assert "too_slow" in j.failure_tags
    assert abs(j.criteria[0].value) < 0.5  # a random policy goes nowhere
    assert "against a target of at least 2.00 m/s" in j.diagnosis


@pytest.mark.parametrize(
    ("env_id", "prompt"),
    [
        ("Hopper-v5", "hop forward"),
        ("Humanoid-v5", "perform a deep squat"),
        ("HumanoidStandup-v5", "sit up and stay sitting"),
        ("Reacher-v5", "reach the target quickly and hold still"),
        ("InvertedPendulum-v5", "keep the pole balanced"),
        ("Ant-v5", "stand on the rear legs"),
    ],
)
def test_random_policies_do_not_pass_dev_intents(env_id: str, prompt: str):
    j = judge_trajectory(
        random_rollout(env_id, prompt), env_id, match_intent(prompt, env_id).criteria, 0.8
    )
    assert not j.passed and j.score < 0.4, (j.score, j.diagnosis)
    assert j.failure_tags and j.diagnosis


def test_a_value_just_short_of_its_target_is_shown_apart_from_it():
    """A Swimmer at 0.147 m/s against 0.15 read "0.15 m/s against a target of at least 0.15
    m/s" in a bench; the diagnosis shows the digits that tell them apart."""
    criteria = match_intent("swim forward", "Swimmer-v5").criteria
    target = next(c for c in criteria if c.metric == "mean_x_velocity").target
    data = synthetic("Swimmer-v5", 200, vx=target - 0.003)
    j = judge_trajectory(data, "Swimmer-v5", criteria, 0.8)
    assert not j.passed
    assert f"{target - 0.003:.3f} m/s against a target of at least {target:.3f} m/s" in (
        j.diagnosis
    )
