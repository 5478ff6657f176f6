"""SAC and TD3 training under the session's reward: runs inside the child process only.

Same outputs as PPO (`model.zip`, `vecnormalize.npz`, `metrics/scalars.jsonl`, TensorBoard,
evaluation checkpoints, `summary.json`). Hyperparameters follow rl-baselines3-zoo's MuJoCo
settings (SAC: lr 3e-4, batch 256, tau 0.005, 256x256; TD3: lr 1e-3, batch 256, Gaussian
action noise 0.1, 400x300), with the replay buffer capped at 300k transitions to fit a laptop
and learning starting after 10k steps (a tenth of tiny budgets). The VecNormalize file is a
pass-through (no normalisation, as the zoo does for these envs) so evaluation and replay load
every algorithm the same way. Checkpoints hold the networks and optimizers but not the replay
buffer: a resumed run refills it and carries on from the checkpoint's counter.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from stable_baselines3 import SAC, TD3
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import VecNormalize

from activities.training.checkpoints import next_multiple, resume
from activities.training.ppo import (
    Emit,
    MetricsCallback,
    checkpoint_s,
    episode_settings,
    learn_and_save,
    reward_envs,
    run_outputs,
    summarize,
)
from activities.training.reward_runtime import Rewards
from activities.training.run_spec import TrainJob
from workflows.contracts.keys import SCALARS

ALGOS = {"sac": SAC, "td3": TD3}


@dataclass(frozen=True)
class OffPolicyPreset:
    """SAC's or TD3's settings (see the module docstring)."""

    learning_rate: float
    batch_size: int = 256
    buffer_size: int = 300_000
    learning_starts: int = 10_000
    tau: float = 0.005
    gamma: float = 0.99
    train_freq: int = 1
    gradient_steps: int = 1
    net_arch: tuple[int, ...] = (256, 256)
    action_noise: float = 0.0  # TD3's Gaussian exploration noise (std, in action units)

    def fit_budget(self, timesteps: int) -> OffPolicyPreset:
        """Learning starts after a tenth of a budget too small for the default warm-up."""
        if timesteps >= 10 * self.learning_starts:
            return self
        return replace(self, learning_starts=max(100, timesteps // 10))


PRESETS = {
    "sac": OffPolicyPreset(learning_rate=3e-4),
    "td3": OffPolicyPreset(learning_rate=1e-3, net_arch=(400, 300), action_noise=0.1),
}


class OffPolicyMetrics(MetricsCallback):
    """MetricsCallback's lines every `every` steps (an off-policy "rollout" is one step)."""

    def __init__(self, *args: Any, every: int = 2048, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.every = every
        self._next = every

    def _on_rollout_end(self) -> None:
        if self.num_timesteps >= self._next:
            self._next = next_multiple(self.num_timesteps, self.every)
            super()._on_rollout_end()

    def _on_rollout_start(self) -> None:
        if self._pending is not None:
            super()._on_rollout_start()

    def _on_training_end(self) -> None:
        # The steps since the last line still make one, however short the run.
        if self._term_steps:
            super()._on_rollout_end()
        super()._on_training_end()


def train(job: TrainJob, reward: Rewards, emit: Emit) -> dict[str, Any]:
    """Train SAC or TD3 (job.algo) under `reward` into job.out_dir; the summary. The PPO-only
    settings of the job (ppo_overrides, init_dir, eval_every) do not apply."""
    algo = job.algo
    if algo not in ALGOS:
        raise ValueError(f"algo must be one of ppo, {', '.join(ALGOS)} (got {algo!r})")
    preset = PRESETS[algo].fit_budget(job.timesteps)
    envs = reward_envs(job.env_id, reward, 1, job.env_kwargs)
    out_dir = job.out_dir
    scalars = out_dir / SCALARS
    resumed_from: int | None = None
    if job.resume_dir is not None:
        # Like PPO's: the metrics written before the checkpoint carry on in this run's file.
        model, venv = resume(
            job.resume_dir, envs, scalars, algo, lambda v: _build(algo, preset, v, job.seed)
        )
        resumed_from = int(model.num_timesteps)
        emit({"event": "resumed", "timesteps": resumed_from})
    else:
        scalars.unlink(missing_ok=True)
        venv = VecNormalize(envs, norm_obs=False, norm_reward=False)
        model = _build(algo, preset, venv, job.seed)
    metrics = OffPolicyMetrics(
        scalars,
        emit,
        job.progress_interval_s,
        window=10,
        scored=envs.take_scored,
        tensorboard=out_dir / "tensorboard",
        every=max(100, min(2048, job.timesteps // 10)),
    )
    callbacks: list[BaseCallback] = [metrics, *run_outputs(job, reward, emit, scalars)]
    wall = learn_and_save(model, job.timesteps, callbacks, resumed_from is not None, out_dir)
    hyper = {"algo": algo, **asdict(preset)}
    episode = episode_settings(envs.envs[0])
    summary = summarize(
        job, model, metrics, wall, resumed_from, hyper, reward, episode, checkpoint_s(callbacks)
    )
    venv.close()
    return summary


def _build(algo: str, preset: OffPolicyPreset, venv: VecNormalize, seed: int) -> SAC | TD3:
    kwargs: dict[str, Any] = {
        "learning_rate": preset.learning_rate,
        "batch_size": preset.batch_size,
        "buffer_size": preset.buffer_size,
        "learning_starts": preset.learning_starts,
        "tau": preset.tau,
        "gamma": preset.gamma,
        "train_freq": preset.train_freq,
        "gradient_steps": preset.gradient_steps,
        "policy_kwargs": {"net_arch": list(preset.net_arch)},
        "seed": seed,
        "device": "cpu",
        "verbose": 0,
    }
    if preset.action_noise > 0:
        shape = venv.action_space.shape
        assert shape is not None, "MuJoCo actions are a Box"
        n = shape[0]
        kwargs["action_noise"] = NormalActionNoise(np.zeros(n), preset.action_noise * np.ones(n))
    model = ALGOS[algo]("MlpPolicy", venv, **kwargs)
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model
