"""A finished run replays outside policyforge's trainer: the model.zip is plain
Stable-Baselines3 (PPO.load still opens it), and the safe loaders replay model and normaliser
without unpickling anything."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from activities.training.policy_io import load_model, load_vecnormalize
from tests.activities.training.rewards import RUN_FORWARD
from workers.local.train import train_local


def test_a_finished_run_loads_and_replays_safely_and_with_plain_sb3(tmp_path):
    reward = tmp_path / "reward_fn.py"
    reward.write_text(RUN_FORWARD)
    out = tmp_path / "run"
    train_local(reward, "Hopper-v5", 2048, 0, out, record_video=False, max_eval_steps=10)
    assert not list(out.rglob("*.pkl")), "no pickle among the artifacts"

    # The safe path: nothing in the files is unpickled.
    venv = load_vecnormalize(out / "vecnormalize.npz", DummyVecEnv([lambda: gym.make("Hopper-v5")]))
    venv.training = False
    venv.norm_reward = False
    model = load_model("ppo", out / "model.zip")
    assert model.num_timesteps >= 2048

    # What an RL user with only SB3 would write (it unpickles the zip's data: trusted files).
    plain = PPO.load(str(out / "model.zip"), device="cpu")
    assert plain.num_timesteps == model.num_timesteps

    obs = venv.reset()
    steps, done = 0, False
    while not done and steps < 1000:
        action, _ = model.predict(obs, deterministic=True)
        np.testing.assert_array_equal(action, plain.predict(obs, deterministic=True)[0])
        assert venv.action_space.contains(action[0].astype(np.float32))
        obs, _, dones, _ = venv.step(action)
        done, steps = bool(dones[0]), steps + 1
    assert steps >= 1
    again, _ = model.predict(venv.reset(), deterministic=True)
    assert np.isfinite(again).all()
