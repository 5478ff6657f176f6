"""One candidate of a batch as a plain Stable-Baselines3 PPO model and VecNormalize file.

The stacked networks are SB3's `MlpPolicy` shapes (separate actor and critic MLPs, a log std
per action), so candidate k's slice copies into a freshly built PPO model layer by layer, and
its normalisation statistics into a VecNormalize: `save_policy` then writes the same model.zip
(with policyforge.json) and vecnormalize.npz as today's trainer, which evaluation, warm starts
and `PPO.load` read unchanged. The SB3 model is a CPU one whatever the engine's device: the
candidate's weights are copied to the host first.
"""

from __future__ import annotations

import contextlib
import random
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
from torch import nn

from activities.training.batched.policy import StackedMLP
from activities.training.phase_clock import with_inputs
from activities.training.policy_io import save_policy
from activities.training.ppo import build_model
from activities.training.sim import make_env

if TYPE_CHECKING:
    from activities.training.batched.ppo import BatchedPPO


def _copy(stacked: StackedMLP, k: int, layers: list[nn.Linear], inputs: torch.Tensor) -> None:
    """Candidate k's layers (host copies) into SB3's, its first layer's input rows times
    `inputs` (the rows past `inputs`, other candidates' padding, left out)."""
    for i, (w, b, linear) in enumerate(zip(stacked.weights, stacked.biases, layers, strict=True)):
        wk, bk = w[k].detach().cpu(), b[k, 0].detach().cpu()
        weight = wk[: len(inputs)] * inputs[:, None] if i == 0 else wk
        linear.weight.copy_(weight.T)
        linear.bias.copy_(bk)


def to_sb3(ppo: BatchedPPO, k: int) -> PPO:
    """Candidate k as an SB3 PPO model on a VecNormalize holding its statistics, with its
    observation and action shaping folded in (see shaping.py): the model acts on the env's
    own observations and actions."""
    env_id = ppo.envs.env_id
    preset = ppo.presets[k]
    shaping = ppo.shapings[k]
    width = ppo.obs_dim + shaping.observes  # the env's observation, then phase and clock
    venv = VecNormalize(
        DummyVecEnv([lambda: with_inputs(make_env(env_id, None), shaping.observes)]),
        norm_obs=preset.norm_obs,
        norm_reward=preset.norm_reward,
        clip_obs=preset.clip_obs,
        gamma=preset.gamma,
    )
    norm = ppo.norm
    scale = shaping.obs_scale
    # The policy saw normalise(scale * obs): the same statistics in the env's own units.
    obs_rms = cast(RunningMeanStd, venv.obs_rms)  # a Box observation space: one statistic
    obs_rms.mean = norm.obs_rms.mean[k][:width] / scale
    obs_rms.var = norm.obs_rms.var[k][:width] / scale**2
    obs_rms.count = float(norm.obs_rms.count[k])
    venv.ret_rms.mean = np.asarray(norm.ret_rms.mean[k])
    venv.ret_rms.var = np.asarray(norm.ret_rms.var[k])
    venv.ret_rms.count = float(norm.ret_rms.count[k])
    with warnings.catch_warnings(), global_rngs_kept():
        # SB3 warns that the minibatch exceeds this one-env buffer: it never trains here.
        warnings.simplefilter("ignore", UserWarning)
        model = build_model(preset, venv, seed=k)
    policy = model.policy
    extractor = policy.mlp_extractor
    with torch.no_grad():
        pi = [m for m in extractor.policy_net if isinstance(m, nn.Linear)]
        vf = [m for m in extractor.value_net if isinstance(m, nn.Linear)]
        # Dropped inputs get zero weights; without normalisation the scale goes there too.
        keep = np.concatenate([shaping.keep_mask(ppo.obs_dim), np.ones(shaping.observes)])
        inputs = torch.as_tensor(keep, dtype=torch.float32)
        if not preset.norm_obs:
            inputs = inputs * scale
        action_net = cast(nn.Linear, policy.action_net)
        _copy(ppo.policy.actor, k, [*pi, action_net], inputs)
        _copy(ppo.policy.critic, k, [*vf, policy.value_net], inputs)
        # The env got centre + s (a - centre): fold s into the action layer and the std.
        s = shaping.action_scale
        centre = torch.as_tensor(ppo.action_centre, dtype=torch.float32)
        action_net.weight.mul_(s)
        action_net.bias.copy_(s * action_net.bias + (1 - s) * centre)
        policy.log_std.copy_(ppo.policy.log_std[k].detach().cpu() + float(np.log(s)))
    model.num_timesteps = ppo.steps_done
    return model


@contextlib.contextmanager
def global_rngs_kept() -> Iterator[None]:
    """Python's, numpy's and torch's global generators as they were: SB3 reseeds all three
    when it builds a model, and an export in the middle of training (an evaluation checkpoint)
    must not change the training's exploration noise. torch's seeding reaches the GPUs' too:
    theirs are kept where CUDA has started (an engine on a GPU draws its noise there)."""
    py_state, np_state = random.getstate(), np.random.get_state()
    gpus = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=gpus):
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)


def save_candidate(ppo: BatchedPPO, k: int, folder: Path) -> None:
    """Candidate k's model.zip and vecnormalize.npz in `folder`, as today's trainer writes."""
    model = to_sb3(ppo, k)
    save_policy(model, folder)
    env = model.get_env()
    if env is not None:
        env.close()
