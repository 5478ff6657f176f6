"""PPO scoring a whole rollout at once trains exactly as scoring each step would."""

from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.vec_env import VecNormalize

from activities.training.ppo import build_model, reward_envs
from activities.training.presets import preset_for
from activities.training.reward_runtime import LocalRewards, load_reward
from activities.training.vec_env import DeferredVecNormalize, defer_rewards

# Stateful (an episode-start reset) and with terms, as generated rewards often are.
STATEFUL = """
import numpy as np

class Progress(RewardFunction):
    def __init__(self):
        self.steps = 0

    def compute(self, obs, action, next_obs, info):
        if info["_episode_start"]:
            self.steps = 0
        self.steps += 1
        forward = float(info["x_velocity"])
        ctrl = -0.1 * float(np.sum(np.square(action)))
        return forward + ctrl + 0.001 * self.steps, {
            "forward": forward, "ctrl": ctrl, "age": 0.001 * self.steps}
"""


def _train(deferred: bool, steps: int = 2048):
    torch.manual_seed(0)
    preset = preset_for("Hopper-v5", {}).fit_budget(steps)
    rewards = LocalRewards(load_reward(STATEFUL, "reward_fn.py"))
    envs = reward_envs("Hopper-v5", rewards, preset.n_envs, None, deferred=deferred)
    cls = DeferredVecNormalize if deferred else VecNormalize
    venv = cls(envs, norm_obs=True, norm_reward=True, clip_obs=10.0, gamma=preset.gamma)
    model = build_model(preset, venv, seed=3)
    if deferred:
        defer_rewards(model, envs)
    model.learn(total_timesteps=steps)
    params = torch.cat([p.detach().flatten() for p in model.policy.parameters()]).numpy()
    return params, venv.ret_rms.var, envs.take_scored()


def test_deferred_rewards_train_the_same_policy():
    # Hopper ends episodes early, so time-limit and termination bootstraps both occur.
    immediate, var_i, scored_i = _train(deferred=False)
    deferred, var_d, scored_d = _train(deferred=True)
    assert np.allclose(var_i, var_d)
    assert np.allclose(immediate, deferred, atol=1e-6), np.abs(immediate - deferred).max()
    # The metrics see the same terms and episodes either way.
    assert set(scored_d.term_sums) == {"forward", "ctrl", "age"}
    assert scored_i.transitions == scored_d.transitions > 0
    assert scored_i.episodes == scored_d.episodes and scored_d.episodes
    assert np.isclose(scored_i.term_sums["age"], scored_d.term_sums["age"])
