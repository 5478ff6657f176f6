"""The env catalog's facts against the live Gymnasium environments."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import pytest

from activities.envs.catalog import ENVS, facts
from activities.envs.quiet import quiet_mujoco
from activities.training.sim import make_env
from workflows.contracts.session import ENV_IDS


def test_catalog_covers_every_env_id():
    assert set(ENVS) == set(ENV_IDS)
    with pytest.raises(ValueError, match="unknown environment"):
        facts("CartPole-v1")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_facts_match_live_env(env_id: str):
    quiet_mujoco()
    f = facts(env_id)
    env = gym.make(env_id)
    try:
        u = env.unwrapped
        env.reset(seed=0)
        _, _, _, _, info = env.step(env.action_space.sample())
        assert (u.model.nq, u.model.nv) == (f.nq, f.nv)
        assert env.observation_space.shape == (f.obs_dim,)
        assert env.action_space.shape == (f.act_dim,)
        assert u.dt == pytest.approx(f.dt)
        assert env.spec.max_episode_steps == f.max_episode_steps
        assert tuple(info) == f.info_keys
        assert f.locomotion == ("x_velocity" in info)
        if hasattr(u, "_ctrl_cost_weight"):
            assert u._ctrl_cost_weight == pytest.approx(f.ctrl_cost_weight)
        if hasattr(u, "_healthy_reward"):
            assert u._healthy_reward == pytest.approx(f.healthy_reward)
        if hasattr(u, "_healthy_z_range"):
            assert tuple(u._healthy_z_range) == f.healthy_z
        if hasattr(u, "_terminate_when_unhealthy"):
            assert u._terminate_when_unhealthy == f.terminates
        else:  # the pendulums always end when they fall; the others never terminate
            assert f.terminates == env_id.startswith("Inverted")
        if f.height_index is not None:
            # The torso's world height follows that qpos entry (HalfCheetah's is 0.7 m lower).
            offset = 0.7 if env_id == "HalfCheetah-v5" else 0.0
            torso_z = float(u.data.body("torso").xpos[2])
            assert torso_z == pytest.approx(offset + float(u.data.qpos[f.height_index]), abs=0.05)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Reacher-v5"])
def test_videos_follow_moving_robots(env_id: str):
    env = make_env(env_id, None, render_size=64)
    try:
        u = env.unwrapped
        track = mujoco.mj_name2id(u.model, mujoco.mjtObj.mjOBJ_CAMERA, "track")
        expected = track if facts(env_id).locomotion else -1
        assert u.mujoco_renderer.camera_id == expected
        # Software rendering without its costliest passes: multisampling and shadows.
        assert u.model.vis.quality.offsamples == 0 and not u.model.light_castshadow.any()
        if facts(env_id).locomotion:  # the floor is drawn far enough for a fast runner
            assert u.model.geom("floor").size[0] >= 500
    finally:
        env.close()
