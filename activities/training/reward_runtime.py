"""Applying the session's reward to environments, from the trusted side.

The reward code itself runs in the sandbox process (its trusted side:
`activities.sandbox.reward_client.SandboxRewards`); here an env is only stepped and its
transitions handed over. `LocalRewards` runs a reward in
this process instead: for tests of our own templates and the overhead benchmark's fixed reward,
never for generated code in a session.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import gymnasium as gym
import numpy as np

from activities.behaviours.sensors import BodySensors
from activities.sandbox.reward_client import Transition
from activities.training.phase_clock import PhaseClock, policy_obs

if TYPE_CHECKING:
    from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
from activities.sandbox.loaded_reward import LoadedReward, counts_of, load_reward
from activities.sandbox.reward_code import RewardFunction, RewardLoadError, parse_check

__all__ = [
    "LoadedReward",
    "LocalRewards",
    "RewardFunction",
    "RewardLoadError",
    "RewardWrapper",
    "ColumnRewards",
    "Rewards",
    "TransitionTap",
    "load_reward",
    "parse_check",
]


class Rewards(Protocol):
    """A reward with per-env instances, scored a batch of transitions at a time."""

    latex: str
    terms: list[str]

    def new_instance(self) -> int:
        """A fresh reward instance (its own state) for one env; its id."""
        ...

    def drop(self, rid: int) -> None:
        """Forget an instance (its env closed)."""
        ...

    def score(self, batch: Sequence[Transition]) -> list[tuple[float, dict[str, float]]]:
        """(total, terms) per transition, in order."""
        ...

    def counts(self) -> dict[str, int]:
        """Calls, and non-finite or clipped rewards repaired so far."""
        ...


def reward_counts(rewards: Rewards) -> tuple[dict[str, int], str | None]:
    """The reward's counts at the end of training, and None; or no counts and the one-line
    fault when its sandbox answered them out of format: what was trained is kept either way."""
    try:
        return rewards.counts(), None
    except RewardLoadError as exc:
        return {}, str(exc)


class ColumnRewards(Rewards, Protocol):
    """A reward that also scores transitions given as columns (the batched trainer's way)."""

    def score_columns(
        self,
        ids: Sequence[int],
        starts: np.ndarray,
        obs: np.ndarray,
        action: np.ndarray,
        next_obs: np.ndarray,
        info: dict[str, np.ndarray],
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Totals (n,) and each term (n,) for n transitions, row i scored by instance ids[i]."""
        ...


class LocalRewards:
    """A reward run in this process (our own code only: see the module docstring)."""

    def __init__(self, reward: LoadedReward) -> None:
        self.template = reward
        self.latex, self.terms = reward.latex, reward.terms
        self.reads_sensors = reward.reads_sensors
        self.shaping = reward.shaping
        self.instances: dict[int, LoadedReward] = {0: reward}
        self._spare: int | None = 0
        self._next = 1  # ids are never reused, even once every instance was dropped

    def new_instance(self) -> int:
        """The loaded instance first, then clones of it."""
        if self._spare is not None:
            rid, self._spare = self._spare, None
            return rid
        rid, self._next = self._next, self._next + 1
        self.instances[rid] = self.template.clone()
        return rid

    def drop(self, rid: int) -> None:
        self.instances.pop(rid, None)

    def score(self, batch: Sequence[Transition]) -> list[tuple[float, dict[str, float]]]:
        return [self.instances[rid](o, a, n, info) for rid, o, a, n, info in batch]

    def counts(self) -> dict[str, int]:
        return counts_of(self.instances.values())

    def score_columns(
        self,
        ids: Sequence[int],
        starts: np.ndarray,
        obs: np.ndarray,
        action: np.ndarray,
        next_obs: np.ndarray,
        info: dict[str, np.ndarray],
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """`score` for columns, one row at a time (as the sandbox host does)."""
        n = len(ids)
        totals = np.zeros(n)
        terms: dict[str, np.ndarray] = {}
        for i, rid in enumerate(ids):
            row = {k: (v[i] if v.ndim > 1 else float(v[i])) for k, v in info.items()}
            row["_episode_start"] = bool(starts[i])
            totals[i], got = self.instances[int(rid)](obs[i], action[i], next_obs[i], row)
            for name, value in got.items():
                terms.setdefault(name, np.zeros(n))[i] = value
        return totals, terms


def as_rewards(reward: Rewards | LoadedReward) -> Rewards:
    return LocalRewards(reward) if isinstance(reward, LoadedReward) else reward


class TransitionTap(gym.Wrapper):
    """Keeps what a reward needs about each step: the observation before it, whether it starts
    an episode, and copies of qpos/qvel in info (so the reward never sees live simulator state).
    """

    def __init__(self, env: gym.Env, *, sensors: bool = False) -> None:
        super().__init__(env)
        self.last_obs: np.ndarray | None = None
        self._episode_start = True
        # The reward's phase and clock (SHAPING; phase_clock.py), tracked as training tracks
        # them: the reward reads them in info, the policy as inputs (`policy_obs`).
        self.clock: PhaseClock | None = None
        mj = cast("MujocoEnv", env.unwrapped)  # every env here is a MuJoCo env
        self._data = mj.data
        # Foot and knee readings (activities/behaviours/sensors.py), when asked for and the
        # body has feet or knees.
        self._sensors: BodySensors | None = None
        if sensors and env.spec is not None:
            found = BodySensors(env.spec.id, mj.model)
            self._sensors = None if found.empty else found

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.last_obs = obs
        self._episode_start = True
        if self.clock is not None:
            self.clock.reset()
        return obs, info

    def step(self, action):
        """The env's step, with what a reward needs added to info (see the class docstring)."""
        obs, env_reward, terminated, truncated, info = self.env.step(action)
        info["_episode_start"] = self._episode_start
        self._episode_start = False
        info["qpos"] = self._data.qpos.copy()
        info["qvel"] = self._data.qvel.copy()
        if self._sensors is not None:
            info.update(self._sensors.read(self._data))
        info["env_reward"] = float(env_reward)
        if self.clock is not None:
            data = {k: np.asarray(v)[None] for k, v in info.items() if k != "_episode_start"}
            info.update({k: float(v[0]) for k, v in self.clock.advance(data).items()})
        return obs, env_reward, terminated, truncated, info

    def policy_obs(self, obs: np.ndarray) -> np.ndarray:
        """What the policy acts on: `obs`, then the phase and clock inputs when it has them."""
        return policy_obs(obs, self.clock)

    def transition(self, rid: int, action: Any, obs: np.ndarray, info: dict) -> Transition:
        """The step just taken as the reward sees it; then `obs` becomes the previous one."""
        prev = self.last_obs if self.last_obs is not None else obs
        self.last_obs = obs
        reward_info = {k: v for k, v in info.items() if k != "env_reward"}
        return (rid, prev, np.asarray(action), obs, reward_info)


class RewardWrapper(TransitionTap):
    """Replaces the env's reward with the session's, one step at a time (evaluation,
    validation, checkpoints); training scores all its envs in one batch instead
    (`activities.training.vec_env`).

    The env's own reward stays available as info["env_reward"], the terms as
    info["reward_terms"].
    """

    def __init__(self, env: gym.Env, reward: Rewards | LoadedReward) -> None:
        # Evaluation trajectories keep the readings for the judge, whatever the reward reads.
        super().__init__(env, sensors=True)
        self.reward = as_rewards(reward)
        self.rid = self.reward.new_instance()
        self._pending: list[Transition] | None = None

    def step(self, action):
        """Step, then score the transition with the session's reward (or hold it while
        `deferred`)."""
        obs, _env_reward, terminated, truncated, info = super().step(action)
        transition = self.transition(self.rid, action, obs, info)
        if self._pending is not None:
            self._pending.append(transition)
            return obs, 0.0, terminated, truncated, info
        [(reward, terms)] = self.reward.score([transition])
        info["reward_terms"] = terms
        return obs, reward, terminated, truncated, info

    @contextlib.contextmanager
    def deferred(self) -> Iterator[list[tuple[float, dict[str, float]]]]:
        """Steps inside return a reward of 0 and no terms; on leaving, the list yielded holds
        every step's (reward, terms), scored in one call in order."""
        self._pending = []
        scored: list[tuple[float, dict[str, float]]] = []
        try:
            yield scored
            pending, self._pending = self._pending, None
            scored += self.reward.score(pending) if pending else []
        finally:
            self._pending = None

    def close(self) -> None:
        self.reward.drop(self.rid)
        super().close()
