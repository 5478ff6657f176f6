"""Validation of reward code on real env steps: run inside the child process only.

Kept apart from training and evaluation so that validating imports neither torch nor SB3.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

from activities.training.reward_runtime import LoadedReward, RewardLoadError, Rewards
from activities.training.sim import make_env


def validate(
    env_id: str,
    reward: Rewards | LoadedReward,
    steps: int,
    seed: int,
    env_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Random actions through the reward; mean |term| per term. Errors propagate to the caller."""
    env = make_env(env_id, reward, env_kwargs)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    sums: dict[str, float] = defaultdict(float)
    started = time.perf_counter()
    # Scored in one call at the end (the actions are random: they never need the reward).
    with env.deferred() as scored:
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
    for total, terms in scored:
        if terms and not math.isclose(total, sum(terms.values()), rel_tol=1e-4, abs_tol=1e-6):
            # The contract: the total equals the sum of the named terms (judges and the
            # reviser reason about the terms).
            raise RewardLoadError(
                f"reward total {total:.6g} differs from the sum of its terms "
                f"{sum(terms.values()):.6g} ({terms}); return the sum of the terms"
            )
        for k, v in terms.items():
            sums[k] += abs(v)
    seconds = time.perf_counter() - started
    env.close()
    return {
        "steps": steps,
        "seconds": round(seconds, 4),
        "term_magnitudes": {k: v / max(steps, 1) for k, v in sums.items()},
    }
