"""Authored rewards and judges of a sample of the paraphrase bank run: on the real envs (with
their phases and SHAPING, as evaluation plays them), and in the sandbox child as the workflow
validates them."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest

from activities.behaviours.measured import judgment_from_code
from activities.behaviours.metrics import Trajectory
from activities.envs.catalog import facts
from activities.envs.quiet import quiet_mujoco
from activities.judging.code_judge import judge as builtin_judge
from activities.llm.offline import OfflineAuthor
from activities.sandbox.judge_code import run_judge
from activities.sandbox.loaded_reward import load_reward
from activities.training.rollout import random_trajectory
from activities.training.sim import make_env

quiet_mujoco()

# Every core, pose family, phase kind and shaping, on every env.
SAMPLE = [
    ("HalfCheetah-v5", "do a backflip"),
    ("HalfCheetah-v5", "sprint, then slow to a walk"),
    ("HalfCheetah-v5", "lower its head and walk forward"),
    ("HalfCheetah-v5", "run forward at most 1.5 m/s without going backward"),
    ("Hopper-v5", "jump twice"),
    ("Hopper-v5", "jump again and again"),
    ("Hopper-v5", "hop forward twice"),
    ("Hopper-v5", "stand still for 3 seconds, then hop forward"),
    ("Walker2d-v5", "stand on one leg"),
    ("Walker2d-v5", "walk forward, then sprint, and finally stop"),
    ("Walker2d-v5", "jump 1 m high"),
    ("Ant-v5", "lie down"),
    ("Ant-v5", "turn left 90 degrees"),
    ("Ant-v5", "walk to the left"),
    ("Ant-v5", "do a backflip"),
    ("Ant-v5", "walk forward with its rear legs off the ground"),
    ("Ant-v5", "roll over sideways twice, then get back on its feet"),
    ("Ant-v5", "spin around twice, then stop"),
    ("Ant-v5", "crawl forward with the torso low. Keep the body level."),
    ("Ant-v5", "stand on three legs with the front left leg lifted"),
    ("Humanoid-v5", "walk forward with its arms out to the sides"),
    ("Humanoid-v5", "squat 3 times"),
    ("Humanoid-v5", "sit down"),
    ("Humanoid-v5", "lean forward 30 degrees"),
    ("Humanoid-v5", "stand with a wide stance and arms at its sides"),
    ("HumanoidStandup-v5", "sit, then get up"),
    ("HumanoidStandup-v5", "stand up within 5 seconds"),
    ("HumanoidStandup-v5", "roll over to the left"),
    ("Swimmer-v5", "swim in circles"),
    ("Swimmer-v5", "turn 180 degrees"),
    ("Reacher-v5", "touch the target within 0.5 seconds"),
    ("InvertedPendulum-v5", "balance the pole for 20 seconds"),
    ("InvertedDoublePendulum-v5", "balance both poles upright for the whole episode"),
]
STEPS = 60


def _phases(code: str) -> int:
    return code.count("'name':") if "'phases'" in code else 1


@pytest.mark.parametrize(("env_id", "prompt"), SAMPLE)
def test_the_authored_reward_runs_with_its_phases_and_shaping(env_id: str, prompt: str):
    authored = OfflineAuthor().author(prompt, env_id)
    reward = load_reward(authored.reward.code, "composed.py")
    assert reward.terms == authored.reward.terms
    env = make_env(env_id, reward)
    env.action_space.seed(0)
    env.reset(seed=0)
    phased = "'phases'" in authored.reward.code
    top = _phases(authored.reward.code)
    try:
        for _ in range(STEPS):
            _, total, terminated, truncated, info = env.step(env.action_space.sample())
            terms = info["reward_terms"]
            assert list(terms) == authored.reward.terms
            assert all(math.isfinite(v) for v in terms.values())
            assert total == pytest.approx(sum(terms.values()))
            if phased:
                assert 0 <= info["phase"] < top
            for name, value in terms.items():
                # Bounded forms: no term exceeds its weight (a phase floor: one per phase).
                cap = authored.reward.params[f"{name}_weight"] * (top if name == "progress" else 1)
                if name != "ctrl":
                    assert -1e-9 <= value <= cap + 1e-9, (name, value)
            if terminated or truncated:
                env.reset()
    finally:
        env.close()


@pytest.mark.parametrize(("env_id", "prompt"), SAMPLE)
def test_the_authored_judge_measures_every_criterion_and_random_actions_do_not_pass(
    env_id: str, prompt: str
):
    authored = OfflineAuthor().author(prompt, env_id)
    reward = load_reward(authored.reward.code, "composed.py")
    trajectory = random_trajectory(env_id, reward, 300, 0)
    names = [c.name for c in authored.criteria]
    if authored.judge is not None:
        judged = run_judge(authored.judge, "judge_fn.py", trajectory, names)
        assert set(judged["criteria"]) == set(names)
        assert set(judged["measured"]) == set(names)
        # The trusted side's verdict on its measured values: random actions do not pass.
        verdict = judgment_from_code(judged, authored.criteria)
        assert not verdict.passed, judged["diagnosis"]
        return
    f = facts(env_id)
    t = Trajectory(
        env_id, f, f.dt, f.max_episode_steps, {k: np.asarray(v) for k, v in trajectory.items()}
    )
    judgment = builtin_judge(t, authored.criteria, 0.8)
    assert "unmeasurable_criterion" not in judgment.failure_tags, judgment.diagnosis


def test_a_phased_judge_reads_the_phase_the_trajectory_recorded():
    authored = OfflineAuthor().author("sprint, then slow to a walk", "HalfCheetah-v5")
    reward = load_reward(authored.reward.code, "composed.py")
    trajectory = random_trajectory("HalfCheetah-v5", reward, 1000, 0)
    assert set(np.unique(trajectory["info_phase"])) == {0.0, 1.0}
    names = [c.name for c in authored.criteria]
    # A made-up episode: 3 m/s in the sprint's phase, 0.8 m/s in the walk's: every criterion met.
    made = dict(trajectory)
    made["info_x_velocity"] = np.where(trajectory["info_phase"] == 0, 3.0, 0.8)
    made["qpos"] = np.zeros_like(trajectory["qpos"])  # upright
    judged = run_judge(authored.judge or "", "judge_fn.py", made, names)
    assert judgment_from_code(judged, authored.criteria).passed, judged["diagnosis"]
    # Slower in the walk than the sprint is not enough: the walk phase must slow to a walk.
    made["info_x_velocity"] = np.full(len(made["info_phase"]), 3.0)
    judged = run_judge(authored.judge or "", "judge_fn.py", made, names)
    assert judged["criteria"]["moves_forward_at_speed_in_walk"] < 1.0


def test_the_sandbox_validates_a_sample_as_the_workflow_does(tmp_path: Path):
    """Reward validation and judge validation in the sandbox child (the OS layer), as the
    workflow's validate step runs them."""
    from activities.runner.protocol import ChildRequest
    from activities.runner.supervisor import run_child
    from activities.training.job import VALIDATE, VALIDATE_JUDGE
    from activities.training.judge_validation import judge_problem

    async def check(env_id: str, prompt: str, out: Path) -> None:
        authored = OfflineAuthor().author(prompt, env_id)
        assert authored.judge is not None
        names = [c.name for c in authored.criteria]
        req = ChildRequest(env_id=env_id, reward_source=authored.reward.code, steps=64)
        validated = await run_child(VALIDATE, req, out / "reward", timeout_s=120)
        assert set(validated["term_magnitudes"]) == set(authored.reward.terms)
        judge_req = req.model_copy(
            update={
                "judge_source": authored.judge,
                "criteria": names,
                "judge_criteria": authored.criteria,
                "steps": 200,
            }
        )
        judged = await run_child(VALIDATE_JUDGE, judge_req, out / "judge", timeout_s=120)
        assert set(judged["judgment"]["criteria"]) == set(names)
        # Accepted: no episode that must not pass passes, and its values agree with the library.
        assert judge_problem(judged["episodes"], authored.criteria, names) is None

    async def all_of_them() -> None:
        for i, (env_id, prompt) in enumerate(
            [
                ("HalfCheetah-v5", "do a backflip"),
                ("Humanoid-v5", "walk forward with its arms out to the sides"),
                ("Hopper-v5", "jump twice"),
            ]
        ):
            await check(env_id, prompt, tmp_path / str(i))

    asyncio.run(all_of_them())
