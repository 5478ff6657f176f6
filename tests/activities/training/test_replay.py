"""A finished run is plain Stable-Baselines3: PPO.load + VecNormalize.load replay it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from activities.training.local import train_local
from tests.activities.training.rewards import RUN_FORWARD


def test_a_finished_run_loads_and_replays_with_plain_sb3(tmp_path):
    reward = tmp_path / "reward_fn.py"
    reward.write_text(RUN_FORWARD)
    out = tmp_path / "run"
    train_local(reward, "Hopper-v5", 2048, 0, out, record_video=False, max_eval_steps=10)

    # What an RL user would write, with nothing from policyforge.
    venv = VecNormalize.load(
        str(out / "vecnormalize.pkl"), DummyVecEnv([lambda: gym.make("Hopper-v5")])
    )
    venv.training = False
    venv.norm_reward = False
    model = PPO.load(str(out / "model.zip"), device="cpu")
    assert model.num_timesteps >= 2048

    obs = venv.reset()
    steps, done = 0, False
    while not done and steps < 1000:
        action, _ = model.predict(obs, deterministic=True)
        assert venv.action_space.contains(action[0].astype(np.float32))
        obs, _, dones, _ = venv.step(action)
        done, steps = bool(dones[0]), steps + 1
    assert steps >= 1
    again, _ = model.predict(venv.reset(), deterministic=True)
    assert np.isfinite(again).all()
