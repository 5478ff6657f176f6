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

The candidates are candidates.py's; the rewards' scoring is scoring.py's (`RolloutScoring`),
the update update.py's (`PPOUpdate`): mixins of `BatchedPPO`, which holds the state.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from activities.training.batched.candidates import Candidate, CandidateStats, batch_shape
from activities.training.batched.device import HostLink, resolve_device
from activities.training.batched.envs import BatchEnvs, Transitions
from activities.training.batched.normalize import StackedNormalizer
from activities.training.batched.policy import StackedActorCritic
from activities.training.batched.scoring import SCORE_ROWS, RolloutScoring, Scored
from activities.training.batched.shaping import Shaping, ShapingError, parse
from activities.training.batched.update import PPOUpdate


def update_precision() -> str:
    """The update's matmul precision: POLICYFORGE_TRAIN_PRECISION ("fp32", the default, or
    "bf16": bfloat16 products with float32 weights, optimiser and losses)."""
    value = os.environ.get("POLICYFORGE_TRAIN_PRECISION", "fp32")
    if value not in ("fp32", "bf16"):
        raise ValueError(f"POLICYFORGE_TRAIN_PRECISION: fp32 or bf16 (got {value!r})")
    return value


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


class BatchedPPO(RolloutScoring, PPOUpdate):
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
