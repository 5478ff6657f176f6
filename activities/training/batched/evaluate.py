"""Deterministic episodes of every candidate of a batch, side by side, in the unshaped env.

The protocol of `evaluation.PeriodicEval` (what bench-train's other sides use): one full
episode per candidate, reset with the same seed each time, mean actions through the
candidate's frozen observation statistics, the env's own return.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from activities.training.batched.envs import BatchEnvs

if TYPE_CHECKING:
    from activities.training.batched.ppo import BatchedPPO


def evaluate_candidates(ppo: BatchedPPO, seed: int, envs: BatchEnvs | None = None) -> list[dict]:
    """One deterministic episode per candidate: [{"eval_return", "eval_length"}] in order.
    `envs` (K copies of the env) may be reused across calls."""
    k = ppo.k
    envs = envs or BatchEnvs(ppo.envs.env_id, k, seed)
    obs = envs.reset(seeds=[seed] * k)
    returns = np.zeros(k)
    lengths = np.zeros(k, dtype=np.int64)
    running = np.ones(k, dtype=bool)
    # Each candidate's phase and clock, tracked on its one evaluation env as in training.
    clocks = [s.phase_clock(envs.env_id, 1, envs.max_steps) for s in ppo.shapings]
    extras = np.zeros((k, 1, ppo.extra), dtype=np.float32)
    while running.any():
        actions = ppo.deterministic_actions(obs[:, None, :], extras)[:, 0]
        out = envs.step(actions)
        for c, clock in enumerate(clocks):
            if clock is not None:
                clock.advance({key: col[c : c + 1] for key, col in out.info.items()})
                extras[c, :, : clock.width] = clock.features()
        returns += np.where(running, out.env_reward, 0.0)
        lengths += running
        running &= ~(out.terminated | out.truncated)
        obs = envs.obs
    return [
        {"eval_return": float(r), "eval_length": int(n)}
        for r, n in zip(returns, lengths, strict=True)
    ]
