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
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from stable_baselines3.common.running_mean_std import RunningMeanStd
from torch import nn

from activities.training.batched.envs import BatchEnvs, Transitions
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
    ppo.refresh_obs()
    return None


def warm_or_cold(ppo: BatchedPPO, k: int, init_dir: Path, seed: int) -> dict[str, Any]:
    """Start candidate k from the policy in `init_dir` when its new reward values what that
    policy does: its deterministic episode returns at least as much under the new reward as
    the fresh policy's. Else (a reward that changed sign or meaning) the candidate starts cold.
    What was decided: {"applied", "reason", "returns": {"previous", "fresh"}}.

    Measured on the engine (200k steps of a revision after 200k steps of the first reward, one
    seed, deterministic replays): Hopper "hop forward" with its forward weight doubled and its
    healthy bonus halved (the reviser's kind of change) reached 2.22 m/s over 310-step episodes
    warm against 0.89 m/s over 140 cold; HalfCheetah "run forward" revised to "run backward"
    reached -4.90 m/s warm against -5.62 cold (warm stood still for its first 50k steps). The
    returns decided both as measured: Hopper's previous policy 718 against a fresh one's 1.1
    (warm), the cheetah's -4,018 against -7.9 (cold).
    """
    fresh_state = _snapshot(ppo, k)
    fresh = episode_return(ppo, k, seed)
    why_not = warm_start(ppo, k, init_dir)
    if why_not is not None:
        return {"applied": False, "reason": why_not, "returns": None}
    previous = episode_return(ppo, k, seed)
    returns = {"previous": round(previous, 3), "fresh": round(fresh, 3)}
    if previous >= fresh:
        return {"applied": True, "reason": None, "returns": returns}
    _restore(ppo, k, fresh_state)
    reason = (
        f"the previous policy returns {previous:.4g} under this reward, a fresh one "
        f"{fresh:.4g}: the reward changed sign or meaning, so the run starts cold"
    )
    return {"applied": False, "reason": reason, "returns": returns}


def _snapshot(ppo: BatchedPPO, k: int) -> dict[str, Any]:
    norm = ppo.norm
    return {
        "params": [p[k].detach().clone() for p in ppo.params],
        "stats": [
            (s.mean[k].copy(), s.var[k].copy(), float(s.count[k]))
            for s in (norm.obs_rms, norm.ret_rms)
        ],
        "obs_n": ppo.obs_n[k].copy(),
    }


def _restore(ppo: BatchedPPO, k: int, state: dict[str, Any]) -> None:
    with torch.no_grad():
        for p, saved in zip(ppo.params, state["params"], strict=True):
            p[k].copy_(saved)
    for stats, (mean, var, count) in zip(
        (ppo.norm.obs_rms, ppo.norm.ret_rms), state["stats"], strict=True
    ):
        stats.mean[k], stats.var[k], stats.count[k] = mean, var, count
    ppo.obs_n[k] = state["obs_n"]


def episode_return(ppo: BatchedPPO, k: int, seed: int) -> float:
    """Candidate k's reward summed over one deterministic episode of its policy as it is now
    (its shaped env, a fresh instance of its reward): what a warm start is weighed by."""
    rewards = ppo.candidates[k].rewards
    shaping = ppo.shapings[k]
    envs = BatchEnvs(ppo.envs.env_id, 1, seed, sensors=getattr(rewards, "reads_sensors", False))
    envs.shape(slice(0, 1), shaping)
    clock = shaping.phase_clock(envs.env_id, 1, envs.max_steps)
    extras = np.zeros((ppo.k, 1, ppo.extra), dtype=np.float32)
    steps: list[Transitions] = []
    obs = envs.reset(seeds=[seed])
    try:
        while not steps or not (steps[-1].terminated[0] or steps[-1].truncated[0]):
            batch = np.repeat(obs[None], ppo.k, axis=0)
            out = envs.step(ppo.deterministic_actions(batch, extras)[k])
            if clock is not None:
                out.info.update(clock.advance(out.info))
                extras[k, :, : clock.width] = clock.features()
            steps.append(out)
            obs = envs.obs
    finally:
        envs.close()
    rid = rewards.new_instance()
    try:
        totals, _ = rewards.score_columns(
            [rid] * len(steps),
            np.array([s.start[0] for s in steps]),
            np.stack([s.obs[0] for s in steps]),
            np.stack([s.action[0] for s in steps]),
            np.stack([s.next_obs[0] for s in steps]),
            {key: np.stack([s.info[key][0] for s in steps]) for key in steps[0].info},
        )
    finally:
        rewards.drop(rid)
    return float(totals.sum())


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
