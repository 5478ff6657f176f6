"""Phase and clock inputs (SHAPING's `phases` and `clock`): kept by the trusted side, read by the
reward in info, seen by the policy in training and in every rollout of the saved model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from activities.runner.baseline_reward import RUN_FORWARD
from activities.training.batched.candidates import Candidate
from activities.training.batched.export import save_candidate
from activities.training.batched.ppo import BatchedPPO
from activities.training.batched.shaping import ShapingError, parse
from activities.training.evaluation import deterministic_act
from activities.training.phase_clock import Phase, PhaseClock, model_inputs
from activities.training.policy_io import load_vecnormalize
from activities.training.presets import preset_for
from activities.training.reward_runtime import LocalRewards, load_reward
from activities.training.rollout import collect, load_model
from activities.training.sim import make_env

# Pays the phase the step ended in: 0 for the first half second, then 1.
PHASED = """
class PaysThePhase(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        phase = float(info["phase"])
        return phase, {"phase": phase, "clock": 0.0 * float(info["clock"])}

    @property
    def latex(self):
        return r"r = \\phi"

    @property
    def terms(self):
        return ["phase", "clock"]


SHAPING = {
    "phases": [{"name": "wait", "until": "time", "above": 0.5}, {"name": "go"}],
    "clock": True,
}
"""


def _local(source: str) -> LocalRewards:
    return LocalRewards(load_reward(source, "reward.py", guarded=False))


def test_phases_advance_on_their_measures_one_at_a_time_and_restart():
    phases = (
        Phase(until="height", above=1.0),
        Phase(until="turn", above=1.0),
        Phase(until="time", above=0.05),
        Phase(name="land"),
    )
    clock = PhaseClock("Hopper-v5", phases, True, 2, limit=100, dt=0.008)  # Hopper's dt
    qpos, qvel = np.zeros((2, 6)), np.zeros((2, 6))
    qpos[:, 1] = [1.2, 0.5]  # copy 0 is high, copy 1 is not
    qvel[:, 2] = -100.0  # nose up at 100 rad/s: 0.8 rad a step

    def step() -> list[float]:
        qpos[:, 2] -= 0.8  # rooty: nose up is negative
        return clock.advance({"qpos": qpos, "qvel": qvel})["phase"].tolist()

    seen = [step() for _ in range(3)]
    # One phase per step at most: copy 0 rises, then turns (1.6 rad after two steps); the
    # third waits for its time.
    assert seen == [[1, 0], [2, 0], [2, 0]]
    np.testing.assert_allclose(clock.turn, [2.4, 2.4])
    assert clock.features().tolist() == [[2 / 3, 0.03], [0.0, 0.03]]
    clock.reset(np.array([True, False]))
    assert clock.phase.tolist() == [0, 0] and clock.steps.tolist() == [0, 3]


def _about(axis: np.ndarray, angle: float) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of a turn by `angle` about `axis`."""
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def test_phases_end_on_a_roll_or_a_turn_about_the_vertical():
    phases = (Phase(until="turn_roll", above=3.0), Phase(until="turn_yaw", below=-2.0), Phase())
    clock = PhaseClock("Ant-v5", phases, False, 1, limit=100, dt=0.05)
    qpos, qvel = np.zeros((1, 15)), np.zeros((1, 14))
    qpos[0, 3] = 1.0
    clock.advance({"qpos": qpos, "qvel": qvel})  # the first step: from here on turns are exact
    seen, info = [], {}
    # Half a radian a step about the torso's forward axis (left side up), six steps; then a
    # clockwise turn about the vertical, half a radian a step.
    for k in range(1, 7):
        qpos[0, 3:7] = _about(np.array([1.0, 0.0, 0.0]), 0.5 * k)
        info = clock.advance({"qpos": qpos, "qvel": qvel})
        seen.append(int(info["phase"][0]))
    assert seen == [0, 0, 0, 0, 0, 0] and info["turn_roll"][0] == pytest.approx(3.0, abs=0.01)
    qpos[0, 3:7] = _about(np.array([1.0, 0.0, 0.0]), np.pi)  # on its back
    assert clock.advance({"qpos": qpos, "qvel": qvel})["phase"][0] == 1
    rolled = qpos[0, 3:7].copy()
    for k in range(1, 6):
        yaw = _about(np.array([0.0, 0.0, 1.0]), -0.5 * k)
        w1, v1 = yaw[0], yaw[1:]
        w2, v2 = rolled[0], rolled[1:]
        qpos[0, 3:7] = np.concatenate([[w1 * w2 - v1 @ v2], w1 * v2 + w2 * v1 + np.cross(v1, v2)])
        info = clock.advance({"qpos": qpos, "qvel": qvel})
    # The nose-up turn stayed 0 throughout; the vertical turn went past -2 rad: the last phase.
    assert info["phase"][0] == 2 and info["turn"][0] == pytest.approx(0.0, abs=1e-6)
    assert info["turn_yaw"][0] == pytest.approx(-2.5, abs=0.01)


@pytest.mark.parametrize(
    ("phases", "why"),
    [
        ([{"until": "height", "above": 0.5}], "2 to 8 phases"),
        ([{"name": "a"}, {"name": "b"}], "every phase but the last needs `until`"),
        ([{"until": "time", "above": 1}, {"until": "time", "above": 2}], "drop its `until`"),
        ([{"until": "time"}, {}], "exactly one of above/below"),
        ([{"until": "height", "above": 0.5}, {}], "no torso height"),
        ([{"until": "spin", "above": 0.5}, {}], "phases"),
    ],
)
def test_phases_that_cannot_apply_are_refused_naming_the_field(phases: list, why: str):
    env = "Reacher-v5" if why == "no torso height" else "HalfCheetah-v5"
    with pytest.raises(ShapingError, match="SHAPING\\['phases'\\]") as caught:
        parse({"phases": phases}, env, 17, 1000)
    assert why in str(caught.value)


def test_a_phased_candidate_trains_beside_a_plain_one_and_its_saved_policy_sees_the_phase(
    tmp_path: Path,
):
    preset = preset_for("HalfCheetah-v5")
    cands = [
        Candidate("phased", _local(PHASED), preset),
        Candidate("plain", _local(RUN_FORWARD), preset),
    ]
    ppo = BatchedPPO("HalfCheetah-v5", cands, 2 * preset.n_steps * preset.n_envs, seed=3)
    assert ppo.in_dim == ppo.obs_dim + 2
    ppo.learn()
    phased, plain = ppo.stats
    # The reward read the trusted phase: 0 for the first ten steps of each episode, then 1.
    steps = 2 * preset.n_steps  # per env, all within the first 1,000-step episode
    assert phased.term_sums["phase"] / phased.transitions == pytest.approx((steps - 10) / steps)
    assert "phase" not in plain.rollout_terms

    save_candidate(ppo, 0, tmp_path / "phased")
    save_candidate(ppo, 1, tmp_path / "plain")
    model = load_model("ppo", tmp_path / "phased" / "model.zip")
    assert model.observation_space.shape == (ppo.obs_dim + 2,)
    assert load_model("ppo", tmp_path / "plain" / "model.zip").observation_space.shape == (
        ppo.obs_dim,
    )
    # The saved policy, given the env's observation and the phase and clock, acts as trained.
    env = make_env("HalfCheetah-v5", _local(PHASED))
    venv = load_vecnormalize(
        tmp_path / "phased" / "vecnormalize.npz", DummyVecEnv([lambda: model_inputs(env, model)])
    )
    act = deterministic_act(model, venv)
    obs = np.array([env.reset(seed=s)[0] for s in range(4)])
    extras = np.array([[0.0, 0.0], [1.0, 0.5], [0.0, 0.2], [1.0, 0.9]])
    batched = ppo.deterministic_actions(np.stack([obs, obs]), np.stack([extras, np.zeros((4, 2))]))[
        0
    ]
    np.testing.assert_allclose(act(np.concatenate([obs, extras], axis=1)), batched, atol=1e-4)

    # An evaluation episode tracks them as training did; the trajectory keeps them for the judge.
    arrays, stats = collect(env, act, seed=0, max_steps=40)
    env.close()
    ppo.close()
    assert stats["episode_length"] == 40
    assert arrays["obs"].shape[1] == ppo.obs_dim  # the env's own observation, as the judge reads
    assert arrays["info_phase"].tolist() == [0.0] * 10 + [1.0] * 30
    np.testing.assert_allclose(arrays["info_clock"], np.arange(1, 41) / 1000)
    assert arrays["reward"].sum() == 30.0


def test_the_turn_counts_the_state_change_not_the_rate_at_the_end_of_each_step():
    """A policy that ends every step turning nose-up, but rocks back within it, turns nothing:
    after an episode's first step (which has only the rate) the clock counts what the judge's
    `total_rotation` counts, the change of the torso's angle between states."""
    clock = PhaseClock(
        "HalfCheetah-v5", (Phase(until="turn", above=3.0), Phase()), False, 1, 100, 0.05
    )
    qpos, qvel = np.zeros((1, 9)), np.zeros((1, 9))
    qvel[:, 2] = -10.0  # nose up at 10 rad/s at the end of every step
    for _ in range(20):
        qpos[:, 2] = 0.1 if qpos[0, 2] == 0.0 else 0.0  # rocking, no net turn
        clock.advance({"qpos": qpos, "qvel": qvel})
    assert clock.turn[0] < 0.7 and clock.phase.tolist() == [0]  # 0.5 of it the first step's rate
    clock.reset()
    for k in range(8):  # a real turn: 0.5 rad a step, the rate agreeing
        qpos[:, 2] = -0.5 * (k + 1)
        clock.advance({"qpos": qpos, "qvel": qvel})
    assert clock.phase.tolist() == [1]


IN_PLACE = """
import primitives as P

ENV = "Hopper-v5"
SHAPING = {"position": True}


class StayHere(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        here = P.position_reward(ENV, info, x=0.0, y=0.0, radius=0.25, margin=1.0)
        return float(here), {"here": float(here)}

    @property
    def latex(self):
        return r"r = p"

    @property
    def terms(self):
        return ["here"]
"""


def test_position_shows_the_policy_where_the_body_is_in_training_and_export(tmp_path: Path):
    """SHAPING `position`: the root's x and y (hidden by every locomotion env) are two more
    inputs, zero at an episode's start and the body's position after each step; the saved
    model takes them, and evaluation appends them as training did."""
    clock = PhaseClock("Ant-v5", (), False, 2, 1000, 0.05, position=True)
    assert clock.width == 2 and clock.features().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    qpos = np.zeros((2, 15))
    qpos[:, :2] = [[1.5, -0.5], [0.2, 0.3]]
    clock.advance({"qpos": qpos, "qvel": np.zeros((2, 14))})
    np.testing.assert_allclose(clock.features(), [[1.5, -0.5], [0.2, 0.3]])
    clock.reset(np.array([True, False]))
    np.testing.assert_allclose(clock.features(), [[0.0, 0.0], [0.2, 0.3]])
    with pytest.raises(ShapingError, match=r"SHAPING\['position'\]: Reacher-v5"):
        parse({"position": True}, "Reacher-v5", 10, 50)

    preset = preset_for("Hopper-v5")
    here = LocalRewards(load_reward(IN_PLACE, "reward.py"))  # guarded: it imports primitives
    cands = [Candidate("here", here, preset)]
    ppo = BatchedPPO("Hopper-v5", cands, preset.n_steps * preset.n_envs, seed=1)
    assert ppo.in_dim == ppo.obs_dim + 2
    ppo.learn()
    save_candidate(ppo, 0, tmp_path / "here")
    model = load_model("ppo", tmp_path / "here" / "model.zip")
    assert model.observation_space.shape == (ppo.obs_dim + 2,)
    env = make_env("Hopper-v5", LocalRewards(load_reward(IN_PLACE, "reward.py")))
    venv = load_vecnormalize(
        tmp_path / "here" / "vecnormalize.npz", DummyVecEnv([lambda: model_inputs(env, model)])
    )
    act = deterministic_act(model, venv)
    obs = np.array([env.reset(seed=s)[0] for s in range(3)])
    where = np.array([[0.0, 0.0], [2.0, 0.0], [-1.0, 0.0]])
    batched = ppo.deterministic_actions(obs[None], where[None])[0]
    np.testing.assert_allclose(act(np.concatenate([obs, where], axis=1)), batched, atol=1e-4)
    # Where the policy stands matters to it: the same observation elsewhere acts otherwise.
    assert not np.allclose(batched[0], batched[1])
    arrays, _ = collect(env, act, seed=0, max_steps=20)
    env.close()
    ppo.close()
    assert arrays["obs"].shape[1] == ppo.obs_dim


# A module whose SHAPING comes out differently when it runs again (validation saw a good one).
DRIFTING = PHASED.replace(
    'SHAPING = {\n    "phases": [{"name": "wait", "until": "time", "above": 0.5}, {"name": "go"}],',
    'SHAPING = {\n    "phases": [{"name": "wait", "until": "spin", "above": 0.5}, {"name": "go"}],',
)


def test_a_shaping_that_no_longer_parses_in_training_is_the_rewards_error():
    """Issue 42: SHAPING comes from the reward's sandbox; one that fails to parse when training
    builds its candidates is the reward's error (for the fixer), not the trainer's."""
    from activities.sandbox.errors import code_error
    from activities.sandbox.reward_code import RewardLoadError

    assert DRIFTING != PHASED
    preset = preset_for("HalfCheetah-v5")
    cands = [Candidate("drifting", _local(DRIFTING), preset)]
    with pytest.raises(RewardLoadError, match="candidate drifting: SHAPING\\['phases'\\]") as info:
        BatchedPPO("HalfCheetah-v5", cands, preset.n_steps * preset.n_envs, seed=0)
    assert code_error(info.value, ("reward_fn.py",)) is not None  # counted as the code's fault
