"""The training envs, under the session reward, which runs in the sandbox process.

PPO's actions never depend on rewards, so PPO scores a whole rollout in one call when its update
needs them (`deferred=True`, see `defer_rewards`): the sandbox's round trip is paid once per
rollout instead of once per step, which matters on a busy machine where every wake-up of the
sandbox waits for a core. SAC and TD3 store each reward as it comes: one call per step.

Episode sums of the session reward, the env's own reward and the length are kept per env and
handed to the metrics (`take_scored`) once the rewards are known.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from activities.sandbox.reward_client import Transition
from activities.training.reward_runtime import Rewards, TransitionTap

# Transitions per call when a rollout is scored: bounds one message and one call's time.
CHUNK = 4096


class Scored:
    """What the metrics read once rewards are known: term sums over the transitions scored,
    and the episodes that ended, as (session return, length, env return)."""

    def __init__(self) -> None:
        self.term_sums: dict[str, float] = defaultdict(float)
        self.transitions = 0
        self.episodes: list[tuple[float, int, float]] = []


def _tapped(make: Callable[[], gym.Env], sensors: bool) -> Callable[[], gym.Env]:
    return lambda: TransitionTap(make(), sensors=sensors)


class ScoredVecEnv(DummyVecEnv):
    """DummyVecEnv over `TransitionTap`-wrapped envs with the session reward.

    Also skips DummyVecEnv's per-step deepcopy of every info dict (~15% of a rollout here):
    the envs return fresh info dicts each step.
    """

    def __init__(
        self, env_fns: list[Callable[[], gym.Env]], rewards: Rewards, *, deferred: bool = False
    ) -> None:
        # Foot and knee readings cost a tenth of a step: only for rewards that read them.
        sensors = bool(getattr(rewards, "reads_sensors", False))
        super().__init__([_tapped(f, sensors) for f in env_fns])
        self.rewards = rewards
        self.deferred = deferred
        self.taps = cast(list[TransitionTap], self.envs)  # made by `_tapped`
        self.ids = [rewards.new_instance() for _ in self.envs]
        n = self.num_envs
        self._ret = np.zeros(n)
        self._env_ret = np.zeros(n)
        self._len = np.zeros(n, dtype=np.int64)
        self._t0 = time.monotonic()
        self._pending: list[list[Transition]] = []
        self._pending_done: list[np.ndarray] = []
        self._pending_env_r: list[np.ndarray] = []
        self._scored = Scored()

    def reset(self):  # noqa: ANN201 - VecEnv's signature
        self._ret[:] = 0.0
        self._env_ret[:] = 0.0
        self._len[:] = 0
        return super().reset()

    def step_wait(self) -> VecEnvStepReturn:
        """Step every env and score the batch in one call (or hold it, `deferred`: rewards 0
        until `flush`); finished episodes reset as DummyVecEnv does."""
        stepped = []
        batch = []
        for i, tap in enumerate(self.taps):
            obs, _, terminated, truncated, info = tap.step(self.actions[i])
            batch.append(tap.transition(self.ids[i], self.actions[i], obs, info))
            stepped.append((obs, terminated, truncated, info))
        dones = np.array([t or tr for _, t, tr, _ in stepped])
        env_r = np.array([info["env_reward"] for *_, info in stepped])
        if self.deferred:
            self._pending.append(batch)
            self._pending_done.append(dones)
            self._pending_env_r.append(env_r)
            self.buf_rews[:] = 0.0  # filled in by `flush` before the update reads them
        else:
            scored = self.rewards.score(batch)
            for i, (reward, terms) in enumerate(scored):
                stepped[i][3]["reward_terms"] = terms
                self.buf_rews[i] = reward
            self._account(np.array([r for r, _ in scored]), [t for _, t in scored], dones, env_r)
        for i, (obs, terminated, truncated, info) in enumerate(stepped):
            self.buf_dones[i] = dones[i]
            info["TimeLimit.truncated"] = truncated and not terminated
            if dones[i]:
                info["terminal_observation"] = obs
                obs, self.reset_infos[i] = self.taps[i].reset()
            self.buf_infos[i] = info
            self._save_obs(i, obs)
        return (
            self._obs_from_buf(),
            np.copy(self.buf_rews),
            np.copy(self.buf_dones),
            list(self.buf_infos),
        )

    def _account(
        self, rewards: np.ndarray, terms: list[dict[str, float]], dones: np.ndarray, env_r: Any
    ) -> None:
        """One vector step's rewards into the episode sums and the metrics, in order."""
        scored = self._scored
        for t in terms:
            for k, v in t.items():
                scored.term_sums[k] += v
        scored.transitions += len(terms)
        self._ret += rewards
        self._env_ret += env_r
        self._len += 1
        for i in np.flatnonzero(dones):
            scored.episodes.append(
                (float(self._ret[i]), int(self._len[i]), float(self._env_ret[i]))
            )
            self._ret[i] = self._env_ret[i] = 0.0
            self._len[i] = 0

    def flush(self) -> tuple[np.ndarray, np.ndarray]:
        """Score every pending step in order: (rewards, dones), each (steps, n_envs)."""
        steps = len(self._pending)
        flat = [t for batch in self._pending for t in batch]
        results: list[tuple[float, dict[str, float]]] = []
        for start in range(0, len(flat), CHUNK):
            results += self.rewards.score(flat[start : start + CHUNK])
        n = self.num_envs
        rewards = np.array([r for r, _ in results], dtype=np.float64).reshape(steps, n)
        dones = np.array(self._pending_done).reshape(steps, n)
        for k in range(steps):
            terms = [t for _, t in results[k * n : (k + 1) * n]]
            self._account(rewards[k], terms, dones[k], self._pending_env_r[k])
        self._pending.clear()
        self._pending_done.clear()
        self._pending_env_r.clear()
        return rewards, dones

    def take_scored(self) -> Scored:
        """The term sums and episodes scored since the last call."""
        out, self._scored = self._scored, Scored()
        return out


class DeferredVecNormalize(VecNormalize):
    """VecNormalize whose reward statistics move when the rewards arrive (a rollout at a time,
    in step order) instead of at each step, where the rewards are still placeholders. The
    observation side and the saved statistics are VecNormalize's own."""

    def _update_reward(self, reward: np.ndarray) -> None:
        pass  # see normalize_scored

    def normalize_reward(self, reward: np.ndarray) -> np.ndarray:
        """Placeholders pass through: `normalize_scored` normalises the real rewards."""
        return reward.astype(np.float32)

    def normalize_scored(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """What VecNormalize would have produced step by step, for (steps, n_envs) rewards."""
        out = np.empty_like(rewards, dtype=np.float32)
        for k in range(len(rewards)):
            if self.training:
                self.returns = self.returns * self.gamma + rewards[k]
                self.ret_rms.update(self.returns)
            out[k] = VecNormalize.normalize_reward(self, rewards[k])
            self.returns[dones[k]] = 0
        return out


def defer_rewards(model: OnPolicyAlgorithm, envs: ScoredVecEnv) -> None:
    """Before each PPO update computes returns, score the rollout and add the (normalised)
    rewards into the buffer, which holds only the time-limit bootstraps SB3 added so far."""
    buffer: Any = model.rollout_buffer
    venv = model.get_vec_normalize_env()
    compute = buffer.compute_returns_and_advantage

    def compute_with_rewards(last_values: Any, dones: np.ndarray) -> None:
        rewards, step_dones = envs.flush()
        if isinstance(venv, DeferredVecNormalize):
            rewards = venv.normalize_scored(rewards, step_dones)
        if len(rewards) != buffer.buffer_size:
            raise RuntimeError(
                f"{len(rewards)} scored steps for a {buffer.buffer_size}-step rollout"
            )
        buffer.rewards += rewards.astype(np.float32)
        compute(last_values=last_values, dones=dones)

    buffer.compute_returns_and_advantage = compute_with_rewards
