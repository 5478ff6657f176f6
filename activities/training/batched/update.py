"""How `BatchedPPO` updates its candidates after a rollout: GAE per candidate's gamma and
lambda, the clipped-surrogate PPO epochs over minibatches of all candidates at once, each
candidate's gradient clipping and Adam step its own, and the update's figures under SB3's
names. A mixin: the state it reads is `BatchedPPO`'s (ppo.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from activities.training.batched.candidates import CandidateStats
from activities.training.batched.device import HostLink
from activities.training.batched.policy import StackedActorCritic

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-5  # SB3's for PPO


class PPOUpdate:
    """The update of a rollout (`BatchedPPO`'s update half; see the module docstring)."""

    k: int
    e: int
    t: int
    device: torch.device
    link: HostLink
    timesteps: int
    steps_done: int
    batch_size: int
    epochs: int
    rng: np.random.Generator
    bf16: bool
    gamma: np.ndarray
    lam: np.ndarray
    lr: np.ndarray
    clip: np.ndarray
    ent: np.ndarray
    vf: np.ndarray
    max_grad: np.ndarray
    linear_lr: np.ndarray
    starts: np.ndarray
    policy: StackedActorCritic
    params: list[torch.nn.Parameter]
    adam_m: list[torch.Tensor]
    adam_v: list[torch.Tensor]
    adam_t: int
    stats: list[CandidateStats]

    def _gae(
        self, rewards: np.ndarray, values: np.ndarray, starts: np.ndarray, last_values: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """SB3's `compute_returns_and_advantage`, per candidate's gamma and lambda."""
        t = len(rewards)
        gamma = self.gamma.reshape(self.k, 1)
        lam = self.lam.reshape(self.k, 1)
        adv = np.zeros_like(rewards)
        last = np.zeros(rewards.shape[1:], dtype=np.float32)
        for step in reversed(range(t)):
            if step == t - 1:
                nonterminal = 1.0 - self.starts.astype(np.float32)
                next_values = last_values
            else:
                nonterminal = 1.0 - starts[step + 1].astype(np.float32)
                next_values = values[step + 1]
            delta = rewards[step] + gamma * next_values * nonterminal - values[step]
            last = delta + gamma * lam * nonterminal * last
            adv[step] = last
        return adv.astype(np.float32), (adv + values).astype(np.float32)

    def _update(self, batch: dict[str, Any], adv: np.ndarray, ret: np.ndarray) -> None:
        k, n = self.k, self.t * self.e
        dev = self.device

        def flat(x: np.ndarray) -> torch.Tensor:
            # (T, K, E, ...) -> (K, T*E, ...), on the device
            x = np.ascontiguousarray(np.swapaxes(x, 0, 1))
            return self.link.batch(x.reshape(k, n, *x.shape[3:]))

        obs, actions = flat(batch["obs"]), flat(batch["actions"])
        old_logp = flat(batch["logp"])
        advantages, returns = flat(adv), flat(ret)
        # SB3 reads the schedule after the rollout is counted: the last update's rate is 0.
        remaining = max(0.0, 1.0 - (self.steps_done + n) / self.timesteps)
        lr = np.where(self.linear_lr, self.lr * remaining, self.lr)
        lr_t = torch.tensor(lr, dtype=torch.float32, device=dev)
        clip = torch.tensor(self.clip, dtype=torch.float32, device=dev).reshape(k, 1)
        ent = torch.tensor(self.ent, dtype=torch.float32, device=dev)
        vf = torch.tensor(self.vf, dtype=torch.float32, device=dev)
        max_grad = torch.tensor(self.max_grad, dtype=torch.float32, device=dev)
        size = min(self.batch_size, n)
        # policy, value, entropy loss, approx KL, clip fraction: read back once, after the epochs
        sums = torch.zeros(5, k, device=dev)
        batches = 0
        for _ in range(self.epochs):
            # numpy's generator draws the order (as before devices); the indexing is on the device
            order = torch.from_numpy(self.rng.permutation(n)).to(dev)
            for lo in range(0, n, size):
                idx = order[lo : lo + size]
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=self.bf16):
                    values, logp, entropy = self.policy.evaluate(obs[:, idx], actions[:, idx])
                values, logp = values.float(), logp.float()
                a = advantages[:, idx]
                if a.shape[1] > 1:
                    a = (a - a.mean(1, keepdim=True)) / (a.std(1, keepdim=True) + 1e-8)
                ratio = torch.exp(logp - old_logp[:, idx])
                surrogate = torch.min(a * ratio, a * torch.clamp(ratio, 1 - clip, 1 + clip))
                policy_loss = -surrogate.mean(1)
                value_loss = (returns[:, idx] - values).pow(2).mean(1)
                entropy_loss = -entropy.mean(1)
                loss = policy_loss + ent * entropy_loss + vf * value_loss
                for p in self.params:
                    p.grad = None
                loss.sum().backward()
                self._adam_step(lr_t, max_grad)
                with torch.no_grad():
                    log_ratio = logp - old_logp[:, idx]
                    kl = ((ratio - 1) - log_ratio).mean(1)
                    clipped = ((ratio - 1).abs() > clip).float().mean(1)
                    sums += torch.stack([policy_loss, value_loss, entropy_loss, kl, clipped])
                    batches += 1
        self._record_update(sums / max(batches, 1), loss, lr, batch)

    def _record_update(
        self, means: torch.Tensor, loss: torch.Tensor, lr: np.ndarray, batch: dict[str, Any]
    ) -> None:
        """Each candidate's update figures under SB3's names (means over the minibatches; the
        loss of the last one; explained variance of the rollout's values)."""
        values = np.swapaxes(batch["values"], 0, 1).reshape(self.k, -1)
        returns = np.swapaxes(batch["returns"], 0, 1).reshape(self.k, -1)
        std = self.policy.log_std.detach().exp().mean(1).cpu().numpy()
        rows = means.detach().cpu().numpy()
        losses = loss.detach().cpu().numpy()
        for c, stats in enumerate(self.stats):
            var = float(np.var(returns[c]))
            residual = float(np.var(returns[c] - values[c]))
            explained = float("nan") if var == 0 else 1 - residual / var
            stats.train = {
                "policy_loss": float(rows[0, c]),
                "value_loss": float(rows[1, c]),
                "entropy_loss": float(rows[2, c]),
                "approx_kl": float(rows[3, c]),
                "clip_fraction": float(rows[4, c]),
                "explained_variance": explained,
                "loss": float(losses[c]),
                "action_std": float(std[c]),
                "learning_rate": float(lr[c]),
            }

    def _adam_step(self, lr: torch.Tensor, max_grad: torch.Tensor) -> None:
        """Adam (torch's update rule) with each candidate's learning rate and its own gradient
        norm clipping; every parameter's first axis is the candidate. One fused (foreach) op
        per stage over all parameters, where the per-candidate factors allow."""
        k = self.k
        grads: list[torch.Tensor] = []
        for p in self.params:
            assert p.grad is not None
            grads.append(p.grad)
        norms = torch.zeros(k, device=self.device)
        for grad in grads:
            norms += grad.reshape(k, -1).pow(2).sum(1)
        scale = torch.clamp(max_grad / (norms.sqrt() + 1e-6), max=1.0)
        self.adam_t += 1
        b1, b2 = ADAM_BETAS
        c1, c2 = 1 - b1**self.adam_t, 1 - b2**self.adam_t
        views = [(k,) + (1,) * (p.dim() - 1) for p in self.params]
        with torch.no_grad():
            g = [grad * scale.view(v) for grad, v in zip(grads, views, strict=True)]
            torch._foreach_mul_(self.adam_m, b1)
            torch._foreach_add_(self.adam_m, g, alpha=1 - b1)
            torch._foreach_mul_(self.adam_v, b2)
            torch._foreach_addcmul_(self.adam_v, g, g, value=1 - b2)
            denom = torch._foreach_sqrt(self.adam_v)
            torch._foreach_div_(denom, c2**0.5)
            torch._foreach_add_(denom, ADAM_EPS)
            step_lr = lr / c1
            for p, m, d, v in zip(self.params, self.adam_m, denom, views, strict=True):
                p.sub_(step_lr.view(v) * m / d)
