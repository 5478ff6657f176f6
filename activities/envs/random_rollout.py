"""What random actions do in an env: the statistics of a few random-action episodes, told to
the elicitor so that no target is one a policy that learned nothing reaches by chance.

Plain Gymnasium with the env's own reward (no generated code runs here): episode lengths,
whether episodes end early, the env's return and each scalar `info` field's mean and extremes.
"""

from __future__ import annotations

from functools import lru_cache

import gymnasium as gym
import numpy as np

EPISODES = 3
MAX_STEPS = 1000


@lru_cache(maxsize=32)
def random_rollout_text(env_id: str, episodes: int = EPISODES, seed: int = 0) -> str:
    """A short section: random-action episodes of `env_id` in numbers (cached per env)."""
    env = gym.make(env_id)
    env.action_space.seed(seed)
    lengths, ended, returns = [], 0, []
    fields: dict[str, list[float]] = {}
    try:
        for ep in range(episodes):
            env.reset(seed=seed + ep)
            total, steps = 0.0, 0
            while steps < MAX_STEPS:
                _, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += float(reward)
                steps += 1
                for key, value in info.items():
                    if np.ndim(value) == 0 and np.isfinite(value):
                        fields.setdefault(key, []).append(float(value))
                if terminated or truncated:
                    ended += int(terminated)
                    break
            lengths.append(steps)
            returns.append(total)
        dt = float(env.unwrapped.dt)  # type: ignore[attr-defined]  # MujocoEnv has it
    finally:
        env.close()
    lines = [
        f"# What random actions do ({episodes} episodes of uniformly random actions)",
        "",
        f"- episode length: {_stats(lengths)} steps (dt {dt:g} s); "
        + (
            f"{ended} of {episodes} ended early (the env terminated them)"
            if ended
            else "none ended early"
        ),
        f"- the env's own return: {_stats(returns)}",
    ]
    for key, values in sorted(fields.items()):
        arr = np.asarray(values)
        lines.append(
            f"- info[{key!r}] over all steps: mean {arr.mean():.3g}, "
            f"min {arr.min():.3g}, max {arr.max():.3g}"
        )
    lines.append(
        "A target that these numbers already meet does not tell a trained policy from a random one."
    )
    return "\n".join(lines)


def _stats(values: list[float] | list[int]) -> str:
    arr = np.asarray(values, dtype=float)
    if len(arr) == 1:
        return f"{arr[0]:.4g}"
    return f"mean {arr.mean():.4g} (min {arr.min():.4g}, max {arr.max():.4g})"
