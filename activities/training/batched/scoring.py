"""How `BatchedPPO` scores a rollout's rewards: each candidate's rows, a chunk of steps at a
time, in that candidate's sandbox (on the scoring thread while the rollout goes on, or
after it for in-process rewards); the scores assembled per step, its episodes' sums
kept in the candidate's stats, a failing reward dropped or ending the run. A mixin:
the state it reads is `BatchedPPO`'s (ppo.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future

import numpy as np

from activities.sandbox.reward_code import RewardLoadError
from activities.training.batched.candidates import Candidate, CandidateStats
from activities.training.batched.envs import Transitions

# Rows per call to a candidate's sandbox while a rollout goes on (a whole rollout is 2-4k rows).
SCORE_ROWS = 512
# One chunk's scores for a candidate: (totals, terms), the reward's error, or None (dropped).
Scored = tuple[np.ndarray, dict[str, np.ndarray]] | RewardLoadError | None


def _field(key: str) -> Callable[[Transitions], np.ndarray]:
    return lambda tr: tr.info[key]


class RolloutScoring:
    """The rewards of a rollout (`BatchedPPO`'s scoring half; see the module docstring)."""

    k: int
    e: int
    candidates: list[Candidate]
    ids: list[list[int]]
    faults: dict[int, str]
    drop_faulty: bool
    stopped: bool
    stats: list[CandidateStats]
    seconds: dict[str, float]
    _ep_ret: np.ndarray
    _ep_env_ret: np.ndarray
    _ep_len: np.ndarray

    def _stacked(self, transitions: list[Transitions]) -> Callable[..., np.ndarray]:
        k, e, t = self.k, self.e, len(transitions)

        def cat(get: Callable[[Transitions], np.ndarray]) -> np.ndarray:
            # (T, K*E, ...) -> per candidate (K, T*E, ...), rows in step order
            x = np.stack([get(tr) for tr in transitions])
            x = x.reshape(t, k, e, *x.shape[2:]).swapaxes(0, 1)
            return x.reshape(k, t * e, *x.shape[3:])

        return cat

    def _score_rows(self, transitions: list[Transitions]) -> list[Scored]:
        """Each candidate's (totals, terms) for these steps' rows, one sandbox call per
        candidate (on the scoring thread); its RewardLoadError instead where it failed, None
        for a candidate already dropped."""
        started = time.perf_counter()
        t = len(transitions)
        cat = self._stacked(transitions)
        obs, act, nxt = cat(lambda r: r.obs), cat(lambda r: r.action), cat(lambda r: r.next_obs)
        start = cat(lambda r: r.start)
        info = {key: cat(_field(key)) for key in transitions[0].info}
        out: list[Scored] = []
        for c, cand in enumerate(self.candidates):
            if c in self.faults:
                out.append(None)
                continue
            try:
                out.append(
                    cand.rewards.score_columns(
                        np.tile(self.ids[c], t).tolist(),
                        start[c],
                        obs[c],
                        act[c],
                        nxt[c],
                        {name: col[c] for name, col in info.items()},
                    )
                )
            except RewardLoadError as exc:
                out.append(exc)
        self.seconds["scoring"] += time.perf_counter() - started
        return out

    def _score(
        self, transitions: list[Transitions], scored: list[Future[list[Scored]]]
    ) -> np.ndarray:
        """Each candidate's rewards for the rollout, (T, K, E), from its chunks as scored;
        episode sums into the candidate's stats. A candidate whose reward failed is dropped
        (`drop_faulty`) or ends the run with the reward's error."""
        k, e, t = self.k, self.e, len(transitions)
        # In-process rewards are scored here, in this thread (their call budget is a signal
        # timer, which only the main thread may set), in one chunk.
        chunks = [future.result() for future in scored] or [self._score_rows(transitions)]
        cat = self._stacked(transitions)
        env_r = cat(lambda r: r.env_reward).reshape(k, t, e)
        done = cat(lambda r: r.terminated | r.truncated).reshape(k, t, e)
        out = np.zeros((t, k, e))
        for c in range(k):
            if c in self.faults:
                continue
            parts = [chunk[c] for chunk in chunks]
            failed = next((p for p in parts if isinstance(p, RewardLoadError)), None)
            if failed is not None or any(p is None for p in parts):
                if failed is None:
                    continue
                if not self.drop_faulty:
                    raise failed
                self.faults[c] = str(failed)
                # Nothing left to train when every candidate failed.
                self.stopped = len(self.faults) == self.k
                continue
            pairs = [p for p in parts if isinstance(p, tuple)]
            totals = np.concatenate([p[0] for p in pairs])
            names = list(dict.fromkeys(n for p in pairs for n in p[1]))
            terms = {
                n: np.concatenate([p[1].get(n, np.zeros(len(p[0]))) for p in pairs]) for n in names
            }
            out[:, c] = totals.reshape(t, e)
            stats = self.stats[c]
            stats.transitions += len(totals)
            stats.rollout_terms = {}
            for name, values in terms.items():
                stats.term_sums[name] = stats.term_sums.get(name, 0.0) + float(values.sum())
                stats.rollout_terms[name] = float(values.mean()) if len(values) else 0.0
            self._episodes(c, totals.reshape(t, e), env_r[c], done[c])
        return out

    def _episodes(self, c: int, rewards: np.ndarray, env_r: np.ndarray, done: np.ndarray) -> None:
        stats = self.stats[c]
        for step in range(len(rewards)):
            self._ep_ret[c] += rewards[step]
            self._ep_env_ret[c] += env_r[step]
            self._ep_len[c] += 1
            for i in np.flatnonzero(done[step]):
                stats.returns.append(float(self._ep_ret[c, i]))
                stats.env_returns.append(float(self._ep_env_ret[c, i]))
                stats.lengths.append(int(self._ep_len[c, i]))
                self._ep_ret[c, i] = self._ep_env_ret[c, i] = 0.0
                self._ep_len[c, i] = 0
