"""Every template, rendered for every env it supports, loads and runs on the real environment."""

from __future__ import annotations

import math

import gymnasium as gym
import mujoco
import numpy as np
import pytest

from activities.llm.offline import match_intent, render_reward
from activities.llm.offline.behaviours.library import BODIES, SPECS
from activities.training.reward_runtime import RewardWrapper, load_reward

# Drop only MuJoCo 4's per-env settotalmass deprecation warning; keep any other.
mujoco.set_mju_user_warning(lambda msg: None if "settotalmass" in msg else print(msg))

# A prompt that selects each template (with its env-specific defaults) on every env it supports.
PROMPTS = {
    "forward": "move forward as fast as possible",
    "track_speed": "move forward slowly",
    "stand": "stand still",
    "hold_height": "perform a deep squat",
    "spin": "spin clockwise in place",
    "jump": "jump as high as possible",
    "balance": "keep the pole balanced",
    "rear_up": "stand on the rear legs",
    "reach": "reach the target quickly and hold still",
}
CASES = [(name, env_id) for name, spec in SPECS.items() for env_id in spec.envs]
STEPS = 50


def test_every_template_has_a_selecting_prompt():
    assert set(PROMPTS) == set(SPECS)


@pytest.mark.parametrize(("template", "env_id"), CASES)
def test_template_runs_on_env(template: str, env_id: str):
    match = match_intent(PROMPTS[template], env_id)
    assert match.template == template
    rendered = render_reward(template, env_id, match.params, PROMPTS[template])
    reward = load_reward(rendered.code, f"{template}_{env_id}.py")
    assert reward.terms == rendered.terms
    assert reward.latex == rendered.latex

    env = RewardWrapper(gym.make(env_id), reward)
    env.action_space.seed(0)
    env.reset(seed=0)
    try:
        for _ in range(STEPS):
            _, total, terminated, truncated, info = env.step(env.action_space.sample())
            terms = info["reward_terms"]
            assert math.isfinite(total)
            assert list(terms) == rendered.terms
            assert all(math.isfinite(v) for v in terms.values())
            assert total == pytest.approx(sum(terms.values()), rel=1e-9, abs=1e-12)
            if terminated or truncated:
                env.reset()
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["Ant-v5", "Humanoid-v5"])
def test_yaw_rate_expression_is_the_world_frame_yaw_rate(env_id: str):
    """The free-joint angular velocity is in the body frame; the template rotates it to world."""
    env = gym.make(env_id)
    env.reset(seed=1)
    env.action_space.seed(1)
    model, data = env.unwrapped.model, env.unwrapped.data  # type: ignore[attr-defined]
    torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    expr = BODIES[env_id].yaw_rate
    assert expr is not None
    vel = np.zeros(6)
    for _ in range(10):
        env.step(env.action_space.sample())
        mujoco.mj_forward(model, data)  # derived quantities are stale right after a step
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, torso, vel, 0)
        ours = eval(expr, {"math": math}, {"qpos": data.qpos.copy(), "qvel": data.qvel.copy()})
        assert ours == pytest.approx(vel[2], abs=1e-6)  # world-frame angular z
    env.close()


def test_revision_note_changes_the_code_but_not_the_reward():
    match = match_intent("hop forward", "Hopper-v5")
    a = render_reward("forward", "Hopper-v5", match.params, "hop forward")
    b = render_reward(
        "forward", "Hopper-v5", match.params, "hop forward", revision="Revised for iteration 2"
    )
    assert a.code != b.code and "# Revised for iteration 2" in b.code
    assert (a.latex, a.terms, a.summary) == (b.latex, b.terms, b.summary)
