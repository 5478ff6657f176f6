"""PPO training under the session's reward: runs inside the child process only.

Writes into the output folder: `model.zip`, `vecnormalize.npz`, `metrics/scalars.jsonl` (one line
per PPO update) and `summary.json`.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO, SAC, TD3
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import LinearSchedule
from stable_baselines3.common.vec_env import VecNormalize

from activities.envs.meanings import terminates_early
from activities.training.board import Board
from activities.training.checkpoints import CheckpointCallback, resume, save_policy, warm_start
from activities.training.eval_checkpoints import EvalCheckpoints
from activities.training.evaluation import PeriodicEval
from activities.training.presets import PPOPreset, preset_for
from activities.training.reward_runtime import Rewards, reward_counts
from activities.training.run_spec import TrainJob
from activities.training.sim import make_env
from activities.training.vec_env import (
    DeferredVecNormalize,
    Scored,
    ScoredVecEnv,
    defer_rewards,
)
from workflows.contracts.keys import SCALARS, SUMMARY

Emit = Callable[[dict[str, Any]], None]

# SB3 logger keys copied into each metrics line, under shorter names.
_TRAIN_KEYS = {
    "train/policy_gradient_loss": "policy_loss",
    "train/value_loss": "value_loss",
    "train/entropy_loss": "entropy_loss",
    "train/approx_kl": "approx_kl",
    "train/clip_fraction": "clip_fraction",
    "train/explained_variance": "explained_variance",
    "train/loss": "loss",
    "train/std": "action_std",
    "train/actor_loss": "actor_loss",
    "train/critic_loss": "critic_loss",
    "train/ent_coef": "ent_coef",
}


class MetricsCallback(BaseCallback):
    """Writes one metrics line per PPO update and emits progress at least every interval_s."""

    def __init__(
        self,
        scalars: Path,
        emit: Emit,
        interval_s: float,
        window: int,
        scored: Callable[[], Scored],
        tensorboard: Path | None = None,
    ) -> None:
        super().__init__()
        self.scored = scored
        self.scalars_path = scalars
        self.tensorboard_dir = tensorboard
        self._tb: Board | None = None
        self.emit = emit
        self.interval_s = interval_s
        self.window = window
        # (timesteps at episode end, session return, length, env return)
        self.episodes: list[tuple[int, float, int, float]] = []
        # (timesteps at rollout end, {term: per-step mean over that rollout})
        self.rollout_terms: list[tuple[int, dict[str, float]]] = []
        self._term_sum: dict[str, float] = defaultdict(float)
        self._term_steps = 0
        self._pending: dict[str, Any] | None = None
        self._updates = 0

    def _on_training_start(self) -> None:
        self.scalars_path.parent.mkdir(parents=True, exist_ok=True)
        # Appends: a resumed run continues the scalars its checkpoint carried.
        self._file = self.scalars_path.open("a")
        if self.tensorboard_dir is not None:
            self._tb = Board(self.tensorboard_dir)
        self.t_start = self._last_emit = self._last_record = time.monotonic()
        self._steps_at_record = self.num_timesteps

    def mean_return(self) -> float | None:
        """Mean session return of the last `window` episodes (None before the first ends)."""
        return _mean(self.episodes[-self.window :], 1)

    def _progress(self) -> None:
        now = time.monotonic()
        self._last_emit = now
        self.emit(
            {
                "event": "progress",
                "timesteps": int(self.num_timesteps),
                "mean_return": self.mean_return(),
                "steps_per_second": round(self.num_timesteps / max(now - self.t_start, 1e-9), 1),
            }
        )

    def _take_scored(self) -> None:
        """Rewards scored since the last look (each step for SAC/TD3, each rollout for PPO)."""
        scored = self.scored()
        for k, v in scored.term_sums.items():
            self._term_sum[k] += v
        self._term_steps += scored.transitions
        self.episodes += [(self.num_timesteps, r, n, env_r) for r, n, env_r in scored.episodes]

    def _on_step(self) -> bool:
        self._take_scored()
        if time.monotonic() - self._last_emit >= self.interval_s:
            self._progress()
        return True

    def _on_rollout_start(self) -> None:
        # Called after the previous update: its losses are now in the logger.
        self._flush()
        self._progress()

    def _on_rollout_end(self) -> None:
        self._take_scored()
        steps = max(self._term_steps, 1)
        terms = {k: v / steps for k, v in self._term_sum.items()}
        self.rollout_terms.append((self.num_timesteps, terms))
        self._term_sum.clear()
        self._term_steps = 0
        recent = self.episodes[-self.window :]
        self._pending = {
            "timesteps": int(self.num_timesteps),
            "ep_return_mean": _mean(recent, 1),
            "ep_len_mean": _mean(recent, 2),
            "env_return_mean": _mean(recent, 3),
            "episodes": len(self.episodes),
            **{f"term_{k}": v for k, v in terms.items()},
        }

    def _on_training_end(self) -> None:
        self._flush()
        self._file.close()
        if self._tb is not None:
            self._tb.close()
        self._progress()  # the final count, so supervisors end on the true total

    def _flush(self) -> None:
        if self._pending is None:
            return
        self._updates += 1
        now = time.monotonic()
        values = self.model.logger.name_to_value
        row = {"update": self._updates, **self._pending}
        for key, name in _TRAIN_KEYS.items():
            if key in values:
                row[name] = float(values[key])
        # PPO has one optimizer; SAC and TD3 an actor's and a critic's (same rate).
        optimizer = getattr(self.model.policy, "optimizer", None)
        if optimizer is None:
            assert isinstance(self.model, SAC | TD3), type(self.model).__name__
            optimizer = self.model.actor.optimizer
        row["learning_rate"] = float(optimizer.param_groups[0]["lr"])
        row["steps_per_second"] = round(
            (self.num_timesteps - self._steps_at_record) / max(now - self._last_record, 1e-9), 1
        )
        row["wall_seconds"] = round(now - self.t_start, 2)
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        if self._tb is not None:
            self._tb.write(row)
        self._pending = None
        self._last_record, self._steps_at_record = now, self.num_timesteps


def build_model(preset: PPOPreset, venv: VecNormalize, seed: int) -> PPO:
    """A PPO model on `venv` with the preset's settings, on the CPU, logging nowhere."""
    lr: Any = preset.learning_rate
    if preset.lr_schedule == "linear":
        lr = LinearSchedule(preset.learning_rate, 0.0, 1.0)
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[preset.activation]
    arch = list(preset.net_arch)
    model = PPO(
        "MlpPolicy",
        venv,
        learning_rate=lr,
        n_steps=preset.n_steps,
        batch_size=preset.batch_size,
        n_epochs=preset.n_epochs,
        gamma=preset.gamma,
        gae_lambda=preset.gae_lambda,
        clip_range=preset.clip_range,
        ent_coef=preset.ent_coef,
        vf_coef=preset.vf_coef,
        max_grad_norm=preset.max_grad_norm,
        target_kl=preset.target_kl,
        policy_kwargs={
            "net_arch": {"pi": arch, "vf": arch},
            "activation_fn": activation,
            "log_std_init": preset.log_std_init,
            "ortho_init": preset.ortho_init,
        },
        seed=seed,
        device="cpu",
        verbose=0,
    )
    # A logger with no outputs: SB3 would otherwise create an empty /tmp/SB3-* folder per learn().
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def train(job: TrainJob, reward: Rewards, emit: Emit) -> dict[str, Any]:
    """Train PPO under `reward` into job.out_dir (see the module docstring); the summary."""
    if job.timesteps <= 0:
        raise ValueError(f"timesteps must be positive (got {job.timesteps})")
    preset = preset_for(job.env_id, job.ppo_overrides).fit_budget(job.timesteps)
    out_dir = job.out_dir
    scalars = out_dir / SCALARS
    envs = reward_envs(job.env_id, reward, preset.n_envs, job.env_kwargs, deferred=True)
    resumed_from: int | None = None
    if job.resume_dir is not None:
        model, venv = resume(
            job.resume_dir,
            envs,
            scalars,
            "ppo",
            lambda v: build_model(preset, v, job.seed),
            normalizer=DeferredVecNormalize,
        )
        resumed_from = int(model.num_timesteps)
        emit({"event": "resumed", "timesteps": resumed_from})
    else:
        scalars.unlink(missing_ok=True)
        venv = DeferredVecNormalize(
            envs,
            norm_obs=preset.norm_obs,
            norm_reward=preset.norm_reward,
            clip_obs=preset.clip_obs,
            gamma=preset.gamma,
        )
        model = build_model(preset, venv, job.seed)
        if job.init_dir is not None:
            emit({"event": "warm_start", "applied": warm_start(model, venv, job.init_dir)})
    defer_rewards(model, envs)
    callback = MetricsCallback(
        scalars,
        emit,
        job.progress_interval_s,
        window=max(10, preset.n_envs),
        scored=envs.take_scored,
        tensorboard=out_dir / "tensorboard",
    )
    extra = run_outputs(job, reward, emit, scalars)
    if job.eval_every > 0:
        # One deterministic episode of the env's own reward every eval_every steps (see
        # evaluation.py): metrics/evals.jsonl and "eval" events, for bench-train.
        evals = out_dir / "metrics" / "evals.jsonl"
        eval_env = make_env(job.env_id, None, job.env_kwargs)
        extra.append(PeriodicEval(eval_env, job.eval_every, job.seed, evals, emit))
    wall = learn_and_save(
        model, job.timesteps, [callback, *extra], resumed_from is not None, out_dir
    )
    hyper = {"algo": "ppo", **preset.as_dict()}
    episode = episode_settings(envs.envs[0])
    summary = summarize(
        job, model, callback, wall, resumed_from, hyper, reward, episode, checkpoint_s(extra)
    )
    venv.close()
    return summary


def checkpoint_s(callbacks: list[BaseCallback]) -> float:
    """Seconds the evaluation checkpoints took of a run's wall time."""
    return sum(cb.seconds for cb in callbacks if isinstance(cb, EvalCheckpoints))


def reward_envs(
    env_id: str,
    rewards: Rewards,
    n_envs: int,
    env_kwargs: dict[str, Any] | None,
    *,
    deferred: bool = False,
) -> ScoredVecEnv:
    """n_envs envs under the session reward, each with its own reward instance (stateful
    rewards keep state per episode); scored each step, or each rollout when `deferred`."""
    factories = [lambda: make_env(env_id, None, env_kwargs)] * n_envs
    return ScoredVecEnv(factories, rewards, deferred=deferred)


def learn_and_save(
    model: BaseAlgorithm,
    timesteps: int,
    callbacks: list[BaseCallback],
    resumed: bool,
    out_dir: Path,
) -> float:
    """Train, then write model.zip and vecnormalize.npz; the seconds learning took."""
    t0 = time.monotonic()
    model.learn(
        # The counter carries on from a checkpoint: train only what is left of the budget.
        total_timesteps=max(timesteps - int(model.num_timesteps), 1),
        callback=callbacks,
        log_interval=None,  # type: ignore[arg-type]  # SB3 reads None as "never log", types int
        reset_num_timesteps=not resumed,
    )
    wall = time.monotonic() - t0
    save_policy(model, out_dir)
    return wall


def run_outputs(job: TrainJob, reward: Rewards, emit: Emit, scalars: Path) -> list[BaseCallback]:
    """The callbacks every algorithm's run gets: resumable checkpoints and evaluation
    checkpoints, when asked for."""
    out: list[BaseCallback] = []
    if job.checkpoint_every > 0:
        out.append(CheckpointCallback(job.out_dir, scalars, job.checkpoint_every, emit))
    if job.eval_checkpoint_episodes > 0:
        out.append(
            EvalCheckpoints(
                job.env_id,
                reward,
                job.timesteps,
                job.out_dir,
                emit,
                episodes=job.eval_checkpoint_episodes,
                max_steps=job.eval_max_steps,
                handoff=job.eval_handoff,
                early_steps=job.early_eval_steps,
            )
        )
    return out


def summarize(
    job: TrainJob,
    model: BaseAlgorithm,
    callback: MetricsCallback,
    wall: float,
    resumed_from: int | None,
    hyperparameters: dict[str, Any],
    reward: Rewards,
    episode: dict[str, Any],
    eval_checkpoint_s: float = 0.0,
) -> dict[str, Any]:
    """summary.json (written) for any algorithm's finished run."""
    done = int(model.num_timesteps)
    trained_here = done - (resumed_from or 0)
    counts, fault = reward_counts(reward)
    summary = {
        "env_id": job.env_id,
        "timesteps": job.timesteps,
        "timesteps_done": done,
        "wall_seconds": round(wall, 2),
        # Of wall_seconds, the evaluation checkpoints' episodes and videos.
        "eval_checkpoint_seconds": round(eval_checkpoint_s, 2),
        "steps_per_second": round(trained_here / max(wall, 1e-9), 1),
        # Set when this run continued from a checkpoint (a worker died mid-run).
        "resumed_from_timesteps": resumed_from,
        "mean_episode_return": _mean(callback.episodes[-callback.window :], 1),
        "mean_env_return": _mean(callback.episodes[-callback.window :], 3),
        "episodes": len(callback.episodes),
        "term_means": final_term_means(callback.rollout_terms, done),
        "still_improving": _still_improving(callback.episodes, done),
        "seed": job.seed,
        "hyperparameters": hyperparameters,
        "env_kwargs": dict(job.env_kwargs),
        "episode": episode,
        "reward_terms": reward.terms,
        # Steps whose reward was NaN/inf (zeroed) or beyond +-1e6 (clipped) by the sandbox.
        "nonfinite_rewards": counts.get("nonfinite"),
        "clipped_rewards": counts.get("clipped"),
        "torch_threads": torch.get_num_threads(),
        **({"fault": fault} if fault is not None else {}),
    }
    (job.out_dir / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def episode_settings(env: gym.Env) -> dict[str, Any]:
    """The episode rules this run trained under, read from the live env (its config)."""
    raw: Any = env.unwrapped
    return {
        "max_episode_steps": env.spec.max_episode_steps if env.spec else None,
        "frame_skip": int(raw.frame_skip),
        "dt": float(raw.dt),
        "terminates_early": terminates_early(raw),
    }


def _mean(episodes: list[tuple[int, float, int, float]], idx: int) -> float | None:
    return float(np.mean([e[idx] for e in episodes])) if episodes else None


def final_term_means(rollouts: list[tuple[int, dict[str, float]]], done: int) -> dict[str, float]:
    """Per-step mean of each term over the last quarter of training (what the policy does now):
    the window of both trainers' summaries (batched/run.py reads it from its metrics rows)."""
    last = [terms for steps, terms in rollouts if steps > 0.75 * done] or [
        t for _, t in rollouts[-1:]
    ]
    keys = sorted({k for terms in last for k in terms})
    return {k: float(np.mean([terms.get(k, 0.0) for terms in last])) for k in keys}


def _still_improving(episodes: list[tuple[int, float, int, float]], done: int) -> bool:
    """Mean return of episodes ending in the last quarter above the previous quarter's (by >1%)."""
    last = [e[1] for e in episodes if e[0] > 0.75 * done]
    prev = [e[1] for e in episodes if 0.5 * done < e[0] <= 0.75 * done]
    if not last or not prev:
        return False
    a, b = float(np.mean(last)), float(np.mean(prev))
    return a > b + 0.01 * abs(b)
