"""PPO for K candidates in one process: each its own reward, parameters, optimiser state,
normalisation statistics and hyperparameters, every step and update batched across them.

Candidate k owns envs [k*E, (k+1)*E) of one `BatchEnvs`. A rollout steps all K*E envs with
one batched policy forward per step; rewards are scored while the rollout goes on, a chunk of
steps at a time, one call per candidate into that candidate's sandbox on a scoring thread (PPO's
actions never depend on rewards; the rollout waits only for its last chunk); the update runs
minibatches of all K candidates through the stacked networks together, each candidate's loss,
gradient clipping and Adam step its own. The algorithm is Stable-Baselines3's PPO (clipped
surrogate, unclipped value loss, per-minibatch advantage normalisation, GAE, time-limit
bootstrap, VecNormalize's statistics), so a candidate trains as today's per-candidate trainer
would with the same preset; what candidates must share is the shape of the batch (envs, steps,
minibatch, epochs, network), see `batch_shape`. The networks, their update and Adam's state run
on `device` (device.py: "cpu", the default, or a GPU); physics and rewards stay on the host.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from activities.sandbox.reward_code import RewardLoadError
from activities.training.batched.device import HostLink, resolve_device
from activities.training.batched.envs import BatchEnvs, Transitions
from activities.training.batched.normalize import StackedNormalizer
from activities.training.batched.policy import StackedActorCritic
from activities.training.batched.shaping import Shaping, ShapingError, parse
from activities.training.presets import SHAPE_FIELDS, PPOPreset
from activities.training.reward_runtime import ColumnRewards

ADAM_BETAS = (0.9, 0.999)
# Rows per call to a candidate's sandbox while a rollout goes on (a whole rollout is 2-4k rows).
SCORE_ROWS = 512
# One chunk's scores for a candidate: (totals, terms), the reward's error, or None (dropped).
Scored = tuple[np.ndarray, dict[str, np.ndarray]] | RewardLoadError | None
ADAM_EPS = 1e-5  # SB3's for PPO


def update_precision() -> str:
    """The update's matmul precision: POLICYFORGE_TRAIN_PRECISION ("fp32", the default, or
    "bf16": bfloat16 products with float32 weights, optimiser and losses)."""
    value = os.environ.get("POLICYFORGE_TRAIN_PRECISION", "fp32")
    if value not in ("fp32", "bf16"):
        raise ValueError(f"POLICYFORGE_TRAIN_PRECISION: fp32 or bf16 (got {value!r})")
    return value


def batch_shape(presets: Sequence[PPOPreset]) -> dict[str, Any]:
    """The settings the candidates share; ValueError naming the first that differs."""
    first = presets[0]
    for p in presets[1:]:
        for name in SHAPE_FIELDS:
            if getattr(p, name) != getattr(first, name):
                raise ValueError(
                    f"candidates in one batch must share {name} "
                    f"({getattr(first, name)!r} != {getattr(p, name)!r}): train them in "
                    "separate batches"
                )
    return {name: getattr(first, name) for name in SHAPE_FIELDS}


@dataclass
class Candidate:
    """One candidate: its reward (scored in its own sandbox) and its PPO settings."""

    name: str
    rewards: ColumnRewards
    preset: PPOPreset


def _shaping(c: Candidate, env_id: str, obs_dim: int, max_steps: int) -> Shaping:
    """The candidate's SHAPING, parsed as validation parsed it. It came from the reward's
    sandbox, so one that no longer parses here (a module that builds it differently in each
    process) is the reward's error, for the fixer, not the trainer's (issue 42)."""
    try:
        return parse(getattr(c.rewards, "shaping", None), env_id, obs_dim, max_steps)
    except ShapingError as exc:
        from activities.sandbox.reward_code import RewardLoadError

        raise RewardLoadError(
            f"candidate {c.name}: {exc} (its SHAPING differs from the one validated: build it "
            "the same way every time the module runs)"
        ) from None


@dataclass
class CandidateStats:
    """What a candidate's episodes earned since training started (finished episodes only)."""

    returns: list[float] = field(default_factory=list)  # under the candidate's reward
    env_returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    term_sums: dict[str, float] = field(default_factory=dict)
    transitions: int = 0
    # The last rollout's per-step term means and the last update's losses (SB3's train/ keys).
    rollout_terms: dict[str, float] = field(default_factory=dict)
    train: dict[str, float] = field(default_factory=dict)


def _field(key: str) -> Callable[[Transitions], np.ndarray]:
    return lambda tr: tr.info[key]


class BatchedPPO:
    """K candidates trained together for `timesteps` steps each (see the module docstring)."""

    def __init__(
        self,
        env_id: str,
        candidates: Sequence[Candidate],
        timesteps: int,
        seed: int,
        *,
        env_kwargs: dict[str, Any] | None = None,
        threads: int = 1,
        precision: str | None = None,
        drop_faulty: bool = False,
        device: str | torch.device = "cpu",
    ) -> None:
        # First: a GPU asked for where there is none fails before anything is built.
        self.device = resolve_device(device)
        self.link = HostLink(self.device)
        self.k = len(candidates)
        # A candidate whose reward code fails mid-training: dropped (its rewards zero from
        # then on) with its one-line error, so that the others train on; else the error ends
        # the run.
        self.drop_faulty = drop_faulty
        self.faults: dict[int, str] = {}
        self.threads = max(1, threads)
        self.bf16 = (precision or update_precision()) == "bf16"
        self.candidates = list(candidates)
        presets = [c.preset.fit_budget(timesteps) for c in candidates]
        shape = batch_shape(presets)
        self.presets = presets
        self.e, self.t = int(shape["n_envs"]), int(shape["n_steps"])
        self.batch_size, self.epochs = int(shape["batch_size"]), int(shape["n_epochs"])
        self.timesteps = timesteps
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        sensors = any(getattr(c.rewards, "reads_sensors", False) for c in candidates)
        self.envs = BatchEnvs(
            env_id, self.k * self.e, seed, env_kwargs=env_kwargs, sensors=sensors, threads=threads
        )
        obs_shape = self.envs.observation_space.shape
        assert obs_shape is not None
        self.obs_dim = int(np.prod(obs_shape))
        self.act_dim = int(np.prod(self.envs.action_space.shape))
        # Each candidate's shaping (shaping.py): checked here, applied to its envs, and to its
        # policy's observations (scale, dropped inputs zeroed) and actions (scaled).
        self.shapings = [_shaping(c, env_id, self.obs_dim, self.envs.max_steps) for c in candidates]
        for k, shaping in enumerate(self.shapings):
            self.envs.shape(slice(k * self.e, (k + 1) * self.e), shaping)
        # Phase and clock inputs (phase_clock.py): each candidate's tracked on its own envs, the
        # stacked input padded to the widest (padding masked off like a dropped input).
        self.clocks = [s.phase_clock(env_id, self.e, self.envs.max_steps) for s in self.shapings]
        self.extra = max(s.observes for s in self.shapings)
        self.in_dim = self.obs_dim + self.extra
        self.obs_scale = np.array([s.obs_scale for s in self.shapings]).reshape(-1, 1, 1)
        self.obs_mask = np.stack(
            [
                np.concatenate([s.keep_mask(self.obs_dim), np.arange(self.extra) < s.observes])
                for s in self.shapings
            ]
        )[:, None].astype(np.float32)
        self.action_scale = np.array([s.action_scale for s in self.shapings]).reshape(-1, 1, 1)
        space = self.envs.action_space
        self.action_centre = (space.high + space.low) / 2

        def per(name: str) -> np.ndarray:
            return np.array([float(getattr(p, name)) for p in presets])

        self.gamma, self.lam = per("gamma"), per("gae_lambda")
        self.lr, self.clip = per("learning_rate"), per("clip_range")
        self.ent, self.vf = per("ent_coef"), per("vf_coef")
        self.max_grad = per("max_grad_norm")
        self.linear_lr = np.array([p.lr_schedule == "linear" for p in presets])
        self.norm = StackedNormalizer(
            self.k,
            self.e,
            (self.in_dim,),
            self.gamma,
            norm_obs=bool(shape["norm_obs"]),
            norm_reward=bool(shape["norm_reward"]),
            clip_obs=float(shape["clip_obs"]),
        )
        # Initialised on the CPU from its generator (the same weights on every device), then moved.
        self.policy = StackedActorCritic(
            self.k,
            self.in_dim,
            self.act_dim,
            tuple(shape["net_arch"]),
            str(shape["activation"]),
            bool(shape["ortho_init"]),
            torch.tensor(per("log_std_init"), dtype=torch.float32),
        ).to(self.device)
        self.params = list(self.policy.parameters())
        self.adam_m = [torch.zeros_like(p) for p in self.params]
        self.adam_v = [torch.zeros_like(p) for p in self.params]
        self.adam_t = 0
        self.ids = [[c.rewards.new_instance() for _ in range(self.e)] for c in candidates]
        self._scorer = ThreadPoolExecutor(1, thread_name_prefix="reward-scoring")
        # Scored beside the rollout only where every reward is a sandbox (its calls wait on
        # another process); in-process rewards are scored after it.
        self._threaded = all(getattr(c.rewards, "scores_beside", False) for c in candidates)
        self.stats = [CandidateStats() for _ in candidates]
        self.steps_done = 0  # per candidate
        self.updates = 0
        self.stopped = False  # set by `progress` to end training before the budget
        self._ep_ret = np.zeros((self.k, self.e))
        self._ep_env_ret = np.zeros((self.k, self.e))
        self._ep_len = np.zeros((self.k, self.e), dtype=np.int64)
        first = self._grouped(self.envs.reset())
        self.obs_n = self._policy_obs(self._with_extras(first, self._features()), update=True)
        self.starts = np.ones((self.k, self.e), dtype=bool)
        # Where the time goes: the rollout (of which physics and the policy's forward passes),
        # the rewards, the update. "reward" is what training waited for its rewards,
        # "scoring" the scoring thread's time in the sandboxes' calls (mostly beside physics).
        self.seconds: dict[str, float] = dict.fromkeys(
            ("rollout", "physics", "policy", "reward", "scoring", "update"), 0.0
        )

    def _grouped(self, x: np.ndarray) -> np.ndarray:
        """(K*E, ...) -> (K, E, ...)."""
        return x.reshape(self.k, self.e, *x.shape[1:])

    def _features(self) -> np.ndarray:
        """Every candidate's phase and clock inputs now, (K, E, extra), zero-padded."""
        out = np.zeros((self.k, self.e, self.extra), dtype=np.float32)
        for k, clock in enumerate(self.clocks):
            if clock is not None:
                out[k, :, : clock.width] = clock.features()
        return out

    def _with_extras(self, raw: np.ndarray, extras: np.ndarray) -> np.ndarray:
        """Raw (K, B, d) observations followed by their (K, B, extra) phase and clock inputs."""
        return np.concatenate([raw, extras], axis=-1) if self.extra else raw

    def _track(self, out: Transitions) -> tuple[np.ndarray, np.ndarray]:
        """Advance the phase and clock trackers by the step `out`, adding what the reward reads
        (info "phase", "turn", "clock"; zeros for candidates without them) to its info; the
        inputs for the step's last observation and for the observation acted on next (the
        finished episodes' trackers restarted)."""
        if not self.extra:
            empty = np.zeros((self.k, self.e, 0), dtype=np.float32)
            return empty, empty
        done = self._grouped(out.terminated | out.truncated)
        columns: dict[str, np.ndarray] = {}
        for k, clock in enumerate(self.clocks):
            if clock is None:
                continue
            rows = slice(k * self.e, (k + 1) * self.e)
            data = {key: col[rows] for key, col in out.info.items()}
            for key, col in clock.advance(data).items():
                columns.setdefault(key, np.zeros(self.k * self.e))[rows] = col
        final = self._features()
        for k, clock in enumerate(self.clocks):
            if clock is not None:
                clock.reset(done[k])
        out.info.update(columns)
        return final, self._features()

    def _policy_obs(self, raw: np.ndarray, update: bool = False) -> np.ndarray:
        """Raw (K, B, in_dim) inputs (the observation, then the phase and clock) as each
        policy sees them: scaled, normalised (the statistics updated first when `update`),
        dropped inputs zeroed."""
        x = raw * self.obs_scale
        normed = self.norm.observe(x) if update else self.norm.normalize(x)
        return normed * self.obs_mask

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        """Each policy's (K, B, act) actions as applied to the env (before clipping)."""
        return self.action_centre + self.action_scale * (actions - self.action_centre)

    # --- one iteration: rollout, rewards, update ----------------------------------------------

    def learn(self, progress: Callable[[BatchedPPO], None] | None = None) -> None:
        """Train until every candidate has `timesteps` steps (or `progress`, called after each
        update, sets `stopped`)."""
        while self.steps_done < self.timesteps and not self.stopped:
            self.iteration()
            if progress is not None:
                progress(self)

    def iteration(self) -> None:
        """One rollout of n_steps per env, its rewards, one PPO update."""
        t0 = time.perf_counter()
        physics = self.envs.stepper.seconds
        batch = self._rollout()
        t1 = time.perf_counter()
        # The rollout's last rows are still being scored: what the run waits for is the
        # reward's cost (the rest was scored while the physics stepped on).
        raw = self._score(batch["transitions"], batch["scored"])
        t2 = time.perf_counter()
        rewards = self.norm.rewards(raw, batch["dones"]) + batch["bootstrap"]
        adv, ret = self._gae(rewards, batch["values"], batch["starts"], batch["last_values"])
        batch["returns"] = ret
        self._update(batch, adv, ret)
        t3 = time.perf_counter()
        self.seconds["rollout"] += t1 - t0
        self.seconds["physics"] += self.envs.stepper.seconds - physics
        self.seconds["reward"] += t2 - t1
        self.seconds["update"] += t3 - t2
        self.steps_done += self.t * self.e
        self.updates += 1

    def _rollout(self) -> dict[str, Any]:
        k, e, t = self.k, self.e, self.t
        obs = np.zeros((t, k, e, self.in_dim), dtype=np.float32)
        actions = np.zeros((t, k, e, self.act_dim), dtype=np.float32)
        logp = np.zeros((t, k, e), dtype=np.float32)
        values = np.zeros((t, k, e), dtype=np.float32)
        starts = np.zeros((t, k, e), dtype=bool)
        dones = np.zeros((t, k, e), dtype=bool)
        bootstrap = np.zeros((t, k, e), dtype=np.float32)
        transitions: list[Transitions] = []
        # Rows go to the reward sandboxes a chunk of steps at a time, on one scoring thread
        # (in step order: a stateful reward sees its env's steps in turn), while the physics
        # steps on: mj_step and the sandbox's answers both leave the GIL free.
        scored: list[Future[list[Scored]]] = []
        chunk = max(1, SCORE_ROWS // e)
        done_to = 0
        gamma = self.gamma.reshape(k, 1).astype(np.float32)
        link = self.link
        with torch.no_grad():
            for step in range(t):
                started = time.perf_counter()
                x = link.to_device("obs", self.obs_n)
                a, lp, val = link.to_host(*self.policy.sample(x))
                self.seconds["policy"] += time.perf_counter() - started
                out = self.envs.step(self.env_actions(a).reshape(k * e, -1))
                final, extras = self._track(out)
                transitions.append(out)
                obs[step], actions[step], logp[step], values[step] = self.obs_n, a, lp, val
                starts[step] = self.starts
                term, trunc = self._grouped(out.terminated), self._grouped(out.truncated)
                done = term | trunc
                dones[step] = done
                current = self._with_extras(self._grouped(self.envs.obs), extras)
                self.obs_n = self._policy_obs(current, update=True)
                if trunc.any():
                    # A time limit is not the end of the task: bootstrap from the value of the
                    # last observation, as SB3 does for TimeLimit.truncated.
                    last = self._policy_obs(self._with_extras(self._grouped(out.next_obs), final))
                    [v] = link.to_host(self.policy.value(link.to_device("last", last)))
                    bootstrap[step] = np.where(trunc, gamma * v, 0.0)
                self.starts = done
                if self._threaded and (step + 1 - done_to >= chunk or step == t - 1):
                    part = transitions[done_to : step + 1]
                    scored.append(self._scorer.submit(self._score_rows, part))
                    done_to = step + 1
            [last_values] = link.to_host(self.policy.value(link.to_device("obs", self.obs_n)))
        return {
            "obs": obs,
            "actions": actions,
            "logp": logp,
            "values": values,
            "starts": starts,
            "dones": dones,
            "bootstrap": bootstrap,
            "last_values": last_values,
            "transitions": transitions,
            "scored": scored,
        }

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

    # --- results ------------------------------------------------------------------------------

    def deterministic_actions(
        self, obs: np.ndarray, extras: np.ndarray | None = None
    ) -> np.ndarray:
        """Each candidate's mean action for raw (K, B, d) observations and their (K, B, extra)
        phase and clock inputs (statistics frozen)."""
        if extras is None:
            extras = np.zeros((*obs.shape[:2], self.extra), dtype=np.float32)
        with torch.no_grad():
            x = self._policy_obs(self._with_extras(obs, extras)).astype(np.float32)
            mean = self.policy.actor(self.link.batch(x)).cpu().numpy()
        space = self.envs.action_space
        return np.clip(self.env_actions(mean), space.low, space.high)

    def refresh_obs(self) -> None:
        """The observations acted on next, normalised again (after the statistics were
        replaced: a resume or a warm start)."""
        self.obs_n = self._policy_obs(
            self._with_extras(self.envs.obs.reshape(self.k, self.e, -1), self._features())
        )

    def set_threads(self, threads: int) -> None:
        """Physics and torch on `threads` threads from the next step on (a new core share)."""
        self.threads = max(1, threads)
        torch.set_num_threads(self.threads)
        self.envs.stepper.set_threads(self.threads)

    def close(self) -> None:
        self._scorer.shutdown(wait=True)
        self.envs.close()
