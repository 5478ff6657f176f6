"""Warm start on the engine: a previous run's model.zip and vecnormalize.npz into candidate k.

The inverse of `export.to_sb3`. The files are first loaded into the SB3 model this candidate
exports to (same preset, shaping and spaces), so the checks of the SB3 warm start apply
unchanged (a policyforge PPO model, no pickle, the same network and observation width); then
its layers are copied into the stacked networks with the candidate's shaping taken back out:
the first layer divided by what export multiplied in (kept inputs, and the observation scale
without normalisation), the action layer and log std by the action scale, and the normaliser's
statistics moved into the scaled units the engine normalises in. The optimizer starts fresh
and the step counter at zero, as SB3's warm start keeps this run's own counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
from stable_baselines3.common.running_mean_std import RunningMeanStd
from torch import nn

from activities.training.batched.export import to_sb3
from activities.training.policy_io import load_vecnormalize, load_weights

if TYPE_CHECKING:
    from activities.training.batched.policy import StackedMLP
    from activities.training.batched.ppo import BatchedPPO


def warm_start(ppo: BatchedPPO, k: int, init_dir: Path) -> str | None:
    """Start candidate k from the policy saved in `init_dir`; None when applied, else why not
    (the candidate keeps its fresh initialisation)."""
    model = to_sb3(ppo, k)
    venv = model.get_env()
    try:
        try:
            loaded = load_vecnormalize(init_dir / "vecnormalize.npz", venv.venv)  # type: ignore[union-attr]
            if loaded.norm_obs != ppo.norm.norm_obs:
                return "the previous run normalised its observations differently"
            load_weights(model, init_dir / "model.zip")
        except ValueError as exc:
            return str(exc)
    finally:
        if venv is not None:
            venv.close()
    shaping = ppo.shapings[k]
    keep = np.concatenate([shaping.keep_mask(ppo.obs_dim), np.ones(shaping.observes)])
    inputs = torch.as_tensor(keep, dtype=torch.float32)
    if not ppo.norm.norm_obs:
        inputs = inputs * shaping.obs_scale
    policy = model.policy
    extractor = policy.mlp_extractor
    action_net = cast(nn.Linear, policy.action_net)
    s = shaping.action_scale
    centre = torch.as_tensor(ppo.action_centre, dtype=torch.float32)
    with torch.no_grad():
        # export: weight * s and s * bias + (1 - s) * centre; log std + log s.
        action_w = action_net.weight / s
        action_b = (action_net.bias - (1 - s) * centre) / s
        pi = [(m.weight, m.bias) for m in extractor.policy_net if isinstance(m, nn.Linear)] + [
            (action_w, action_b)
        ]
        vf = [(m.weight, m.bias) for m in extractor.value_net if isinstance(m, nn.Linear)]
        vf.append((policy.value_net.weight, policy.value_net.bias))
        _copy_into(ppo.policy.actor, k, pi, inputs)
        _copy_into(ppo.policy.critic, k, vf, inputs)
        log_std = policy.log_std.detach().cpu() - float(np.log(s))
        ppo.policy.log_std[k].copy_(log_std.to(ppo.policy.log_std.device))
    width = len(keep)
    scale = shaping.obs_scale
    norm = ppo.norm
    if norm.norm_obs:
        obs_rms = cast(RunningMeanStd, loaded.obs_rms)
        norm.obs_rms.mean[k][:width] = obs_rms.mean * scale
        norm.obs_rms.var[k][:width] = obs_rms.var * scale**2
        norm.obs_rms.count[k] = obs_rms.count
    norm.ret_rms.mean[k] = loaded.ret_rms.mean
    norm.ret_rms.var[k] = loaded.ret_rms.var
    norm.ret_rms.count[k] = loaded.ret_rms.count
    # The first observations, normalised with the statistics just loaded.
    ppo.obs_n = ppo._policy_obs(
        ppo._with_extras(ppo.envs.obs.reshape(ppo.k, ppo.e, -1), ppo._features())
    )
    return None


def _copy_into(
    stacked: StackedMLP,
    k: int,
    layers: Sequence[tuple[torch.Tensor, torch.Tensor]],
    inputs: torch.Tensor,
) -> None:
    """SB3's (out, in) layers into candidate k of `stacked`, the first layer's rows divided by
    `inputs` (zero where an input is dropped: export zeroed them)."""
    divisor = torch.where(inputs != 0, inputs, torch.ones_like(inputs))
    for i, ((weight, bias), w, b) in enumerate(
        zip(layers, stacked.weights, stacked.biases, strict=True)
    ):
        wk = weight.detach().cpu().T
        if i == 0:
            wk = torch.where(inputs[:, None] != 0, wk / divisor[:, None], torch.zeros_like(wk))
            w[k, : len(inputs)].copy_(wk.to(w.device))
            w[k, len(inputs) :].zero_()  # other candidates' padding: masked off anyway
        else:
            w[k].copy_(wk.to(w.device))
        b[k, 0].copy_(bias.detach().cpu().to(b.device))
