"""VecNormalize's statistics for K candidates at once: observations and returns per candidate.

The same rules as Stable-Baselines3's `VecNormalize` (running mean and variance merged batch
by batch, starting from count 1e-4; observations clipped to +-clip_obs, rewards divided by the
running std of the discounted return and clipped to +-10), so one candidate's statistics can be
saved as a plain VecNormalize file (`export.py`).
"""

from __future__ import annotations

import numpy as np

EPSILON = 1e-8
CLIP_REWARD = 10.0


class StackedRunningStats:
    """K running means and variances of `shape`-sized values, updated from (K, B, *shape)."""

    def __init__(self, k: int, shape: tuple[int, ...] = ()) -> None:
        self.mean = np.zeros((k, *shape))
        self.var = np.ones((k, *shape))
        self.count = np.full(k, 1e-4)

    def update(self, x: np.ndarray) -> None:
        """Merge a batch per candidate (Chan et al., as SB3's RunningMeanStd)."""
        batch_mean = x.mean(axis=1)
        batch_var = x.var(axis=1)
        n = x.shape[1]
        total = self.count + n
        c = self.count.reshape(-1, *([1] * (self.mean.ndim - 1)))
        t = total.reshape(c.shape)
        delta = batch_mean - self.mean
        m2 = self.var * c + batch_var * n + np.square(delta) * c * n / t
        self.mean = self.mean + delta * n / t
        self.var = m2 / t
        self.count = total


class StackedNormalizer:
    """Observation and reward normalisation for K candidates of E envs each."""

    def __init__(
        self,
        k: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        gamma: np.ndarray,
        *,
        norm_obs: bool,
        norm_reward: bool,
        clip_obs: float,
    ) -> None:
        self.obs_rms = StackedRunningStats(k, obs_shape)
        self.ret_rms = StackedRunningStats(k)
        self.gamma = gamma.reshape(k, 1)
        self.returns = np.zeros((k, n_envs))
        self.norm_obs, self.norm_reward, self.clip_obs = norm_obs, norm_reward, clip_obs

    def observe(self, obs: np.ndarray) -> np.ndarray:
        """Update with raw (K, E, d) observations, then return them normalised."""
        if self.norm_obs:
            self.obs_rms.update(obs)
        return self.normalize(obs)

    def normalize(self, obs: np.ndarray) -> np.ndarray:
        """(K, B, d) raw observations normalised with the current statistics (no update)."""
        if not self.norm_obs:
            return obs.astype(np.float32)
        std = np.sqrt(self.obs_rms.var + EPSILON)[:, None]
        out = (obs - self.obs_rms.mean[:, None]) / std
        return np.clip(out, -self.clip_obs, self.clip_obs).astype(np.float32)

    def rewards(self, raw: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """A rollout's (T, K, E) rewards normalised step by step, as VecNormalize would have."""
        if not self.norm_reward:
            return raw.astype(np.float32)
        out = np.empty(raw.shape, dtype=np.float32)
        for t in range(len(raw)):
            self.returns = self.returns * self.gamma + raw[t]
            self.ret_rms.update(self.returns)
            scale = np.sqrt(self.ret_rms.var + EPSILON)[:, None]
            out[t] = np.clip(raw[t] / scale, -CLIP_REWARD, CLIP_REWARD)
            self.returns[dones[t]] = 0.0
        return out
