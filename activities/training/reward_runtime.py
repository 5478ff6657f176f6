"""Loading reward code in the project's contract and applying it to an environment.

The contract (DESIGN.md): a class deriving `RewardFunction` with
`compute(obs, action, next_obs, info) -> (float, dict[str, float])` and `latex` / `terms`
properties, or a plain `reward_fn(obs, action, next_obs, info)` returning the same pair.
`RewardFunction` is predefined in the namespace the code runs in, so reward files need no import.

Generated code is only ever loaded here, and this module is only used inside the child processes
started by `activities.training.child`, never in a worker process.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np


class RewardLoadError(ValueError):
    """Reward code that cannot be used; the message is one line a person or an LLM can act on."""


class RewardFunction:
    """Base class for reward code. Subclasses implement `compute` and describe themselves."""

    def compute(self, obs, action, next_obs, info) -> tuple[float, dict[str, float]]:
        raise NotImplementedError("a RewardFunction subclass must implement compute()")

    @property
    def latex(self) -> str:
        return ""

    @property
    def terms(self) -> list[str]:
        return []


class LoadedReward:
    """Uniform view over either form of the contract."""

    def __init__(self, compute: Callable[..., Any], latex: str, terms: list[str]) -> None:
        self._compute = compute
        self.latex = latex
        self.terms = terms

    def __call__(self, obs, action, next_obs, info) -> tuple[float, dict[str, float]]:
        out = self._compute(obs, action, next_obs, info)
        if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
            raise RewardLoadError(
                f"reward must return (float, dict[str, float]); got {type(out).__name__}"
            )
        total, terms = out
        try:
            total = float(total)
            terms = {str(k): float(v) for k, v in terms.items()}
        except (TypeError, ValueError) as exc:
            raise RewardLoadError(f"reward total and terms must be numbers: {exc}") from None
        if not math.isfinite(total):
            raise RewardLoadError(f"reward is not finite ({total}); terms: {terms}")
        return total, terms


def parse_check(source: str, filename: str = "<reward>") -> None:
    """Raise RewardLoadError with the line number when the source does not parse."""
    try:
        ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise RewardLoadError(f"{filename} does not parse: line {exc.lineno}: {exc.msg}") from None


def load_reward(source: str, filename: str = "<reward>") -> LoadedReward:
    parse_check(source, filename)
    namespace: dict[str, Any] = {"RewardFunction": RewardFunction, "__name__": "reward_module"}
    try:
        exec(compile(source, filename, "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - any failure of user code is reported, not raised
        raise RewardLoadError(f"{filename} failed to load: {type(exc).__name__}: {exc}") from None

    classes = [
        v
        for v in namespace.values()
        if isinstance(v, type) and v is not RewardFunction and callable(getattr(v, "compute", None))
    ]
    # Prefer classes that derive from our base; a duck-typed class with compute() also works.
    classes.sort(key=lambda c: not issubclass(c, RewardFunction))
    if classes:
        try:
            obj = classes[0]()
        except Exception as exc:  # noqa: BLE001
            raise RewardLoadError(
                f"{classes[0].__name__}() failed: {type(exc).__name__}: {exc}"
            ) from None
        return LoadedReward(
            obj.compute, str(getattr(obj, "latex", "")), list(getattr(obj, "terms", []))
        )
    fn = namespace.get("reward_fn")
    if callable(fn):
        return LoadedReward(fn, str(namespace.get("LATEX", "")), list(namespace.get("TERMS", [])))
    raise RewardLoadError(
        f"{filename} defines no RewardFunction subclass "
        "and no reward_fn(obs, action, next_obs, info)"
    )


class RewardWrapper(gym.Wrapper):
    """Replaces the env's reward with the session's reward.

    Reward code sees copies of obs and of qpos/qvel (in info), so it cannot move the robot. The
    env's own reward stays available as info["env_reward"], the terms as info["reward_terms"].
    """

    def __init__(self, env: gym.Env, reward: LoadedReward) -> None:
        super().__init__(env)
        self.reward = reward
        self._last_obs: np.ndarray | None = None
        self._data = env.unwrapped.data  # type: ignore[attr-defined]

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._last_obs = obs
        self._episode_start = True
        return obs, info

    def step(self, action):
        obs, env_reward, terminated, truncated, info = self.env.step(action)
        # Stateful reward code resets its memory on the first step of each episode.
        info["_episode_start"] = getattr(self, "_episode_start", True)
        self._episode_start = False
        info["qpos"] = self._data.qpos.copy()
        info["qvel"] = self._data.qvel.copy()
        prev = self._last_obs if self._last_obs is not None else obs
        reward, terms = self.reward(prev.copy(), np.array(action, copy=True), obs.copy(), info)
        info["env_reward"] = float(env_reward)
        info["reward_terms"] = terms
        self._last_obs = obs
        return obs, reward, terminated, truncated, info
