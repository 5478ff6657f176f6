"""One candidate of a batch as a plain Stable-Baselines3 PPO model and VecNormalize file.

The stacked networks are SB3's `MlpPolicy` shapes (separate actor and critic MLPs, a log std
per action), so candidate k's slice copies into a freshly built PPO model layer by layer, and
its normalisation statistics into a VecNormalize: `save_policy` then writes the same model.zip
(with policyforge.json) and vecnormalize.npz as today's trainer, which evaluation, warm starts
and `PPO.load` read unchanged.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
from torch import nn

from activities.training.batched.policy import StackedMLP
from activities.training.policy_io import save_policy
from activities.training.ppo import build_model
from activities.training.sim import make_env

if TYPE_CHECKING:
    from activities.training.batched.ppo import BatchedPPO


def _copy(stacked: StackedMLP, k: int, layers: list[nn.Linear]) -> None:
    for w, b, linear in zip(stacked.weights, stacked.biases, layers, strict=True):
        linear.weight.copy_(w[k].T)
        linear.bias.copy_(b[k, 0])


def to_sb3(ppo: BatchedPPO, k: int) -> PPO:
    """Candidate k as an SB3 PPO model on a VecNormalize holding its statistics."""
    env_id = ppo.envs.env_id
    preset = ppo.presets[k]
    venv = VecNormalize(
        DummyVecEnv([lambda: make_env(env_id, None)]),
        norm_obs=preset.norm_obs,
        norm_reward=preset.norm_reward,
        clip_obs=preset.clip_obs,
        gamma=preset.gamma,
    )
    norm = ppo.norm
    obs_rms = cast(RunningMeanStd, venv.obs_rms)  # a Box observation space: one statistic
    obs_rms.mean = norm.obs_rms.mean[k].copy()
    obs_rms.var = norm.obs_rms.var[k].copy()
    obs_rms.count = float(norm.obs_rms.count[k])
    venv.ret_rms.mean = np.asarray(norm.ret_rms.mean[k])
    venv.ret_rms.var = np.asarray(norm.ret_rms.var[k])
    venv.ret_rms.count = float(norm.ret_rms.count[k])
    with warnings.catch_warnings():
        # SB3 warns that the minibatch exceeds this one-env buffer: it never trains here.
        warnings.simplefilter("ignore", UserWarning)
        model = build_model(preset, venv, seed=k)
    policy = model.policy
    extractor = policy.mlp_extractor
    with torch.no_grad():
        pi = [m for m in extractor.policy_net if isinstance(m, nn.Linear)]
        vf = [m for m in extractor.value_net if isinstance(m, nn.Linear)]
        _copy(ppo.policy.actor, k, [*pi, cast(nn.Linear, policy.action_net)])
        _copy(ppo.policy.critic, k, [*vf, policy.value_net])
        policy.log_std.copy_(ppo.policy.log_std[k])
    model.num_timesteps = ppo.steps_done
    return model


def save_candidate(ppo: BatchedPPO, k: int, folder: Path) -> None:
    """Candidate k's model.zip and vecnormalize.npz in `folder`, as today's trainer writes."""
    model = to_sb3(ppo, k)
    save_policy(model, folder)
    env = model.get_env()
    if env is not None:
        env.close()
