"""The training envs: stepped together, the session reward scored for all of them in one call.

One call per vector step keeps the sandbox's round trip off the per-env path (16 envs: one
round trip for 16 transitions). Episode sums of the session reward, the env's own reward and
the length go to info["episode"] at episode end, where SB3 and our metrics read them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from activities.training.reward_runtime import Rewards, TransitionTap


class ScoredVecEnv(DummyVecEnv):
    """DummyVecEnv over `TransitionTap`-wrapped envs with the session reward, batched.

    Also skips DummyVecEnv's per-step deepcopy of every info dict (~15% of a rollout here):
    the envs return fresh info dicts each step.
    """

    def __init__(self, env_fns: list[Callable[[], gym.Env]], rewards: Rewards) -> None:
        super().__init__([lambda f=f: TransitionTap(f()) for f in env_fns])
        self.rewards = rewards
        self.taps: list[TransitionTap] = self.envs  # type: ignore[assignment]
        self.ids = [rewards.new_instance() for _ in self.envs]
        n = self.num_envs
        self._ret = np.zeros(n)
        self._env_ret = np.zeros(n)
        self._len = np.zeros(n, dtype=np.int64)
        self._t0 = time.monotonic()

    def reset(self):  # noqa: ANN201 - VecEnv's signature
        self._ret[:] = 0.0
        self._env_ret[:] = 0.0
        self._len[:] = 0
        return super().reset()

    def step_wait(self) -> VecEnvStepReturn:
        stepped = []
        batch = []
        for i, tap in enumerate(self.taps):
            obs, _, terminated, truncated, info = tap.step(self.actions[i])
            batch.append(tap.transition(self.ids[i], self.actions[i], obs, info))
            stepped.append((obs, terminated, truncated, info))
        scored = self.rewards.score(batch)
        for i, ((obs, terminated, truncated, info), (reward, terms)) in enumerate(
            zip(stepped, scored, strict=True)
        ):
            info["reward_terms"] = terms
            self.buf_rews[i] = reward
            self._ret[i] += reward
            self._env_ret[i] += info["env_reward"]
            self._len[i] += 1
            done = terminated or truncated
            self.buf_dones[i] = done
            info["TimeLimit.truncated"] = truncated and not terminated
            if done:
                info["episode"] = {
                    "r": float(self._ret[i]),
                    "l": int(self._len[i]),
                    "t": round(time.monotonic() - self._t0, 3),
                    "env_r": float(self._env_ret[i]),
                }
                self._ret[i] = self._env_ret[i] = 0.0
                self._len[i] = 0
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
