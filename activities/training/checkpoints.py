"""Checkpoints of a training run, and resuming from one: run inside the child only.

Every `every` timesteps, right after a PPO update (so every counted step has been trained on),
the child writes `checkpoints/step_<n>/` with model.zip (policy, optimizer state and the
timestep counter), vecnormalize.npz (observation and return statistics) and scalars.jsonl so
far, then emits {"event": "checkpoint", "timesteps": n, "dir": ...}. The activity uploads it
to S3 and heartbeats its key; a retried activity downloads it and passes it back as
`resume_dir`, and training continues from that counter. Files are written and read by
`policy_io`: nothing in them is unpickled, so a tampered checkpoint cannot run code here.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from activities.training.policy_io import load_model, load_vecnormalize, load_weights
from activities.training.policy_io import save_policy as save_policy

ModelT = TypeVar("ModelT", bound=BaseAlgorithm)


def next_multiple(n: int, every: int) -> int:
    """The first multiple of `every` after `n`: where a periodic callback fires next."""
    return (n // every + 1) * every


class CheckpointCallback(BaseCallback):
    """Writes a resumable checkpoint every `every` timesteps and emits its folder (see the
    module docstring)."""

    def __init__(self, out_dir: Path, scalars: Path, every: int, emit: Callable[[dict], None]):
        super().__init__()
        self.out_dir = out_dir
        self.scalars = scalars
        self.every = every
        self.emit = emit
        self._next = every

    def _init_callback(self) -> None:
        # Resumed runs start counting from their restored timestep counter.
        self._next = next_multiple(self.num_timesteps, self.every)

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        # After the previous update: the model has trained on every step counted so far.
        if self.num_timesteps < self._next:
            return
        self._next = next_multiple(self.num_timesteps, self.every)
        folder = self.out_dir / "checkpoints" / f"step_{self.num_timesteps}"
        save_policy(self.model, folder)
        if self.scalars.exists():
            shutil.copyfile(self.scalars, folder / "scalars.jsonl")
        self.emit(
            {
                "event": "checkpoint",
                "timesteps": int(self.num_timesteps),
                "dir": str(folder.relative_to(self.out_dir)),
            }
        )


def resume(
    resume_dir: Path,
    venv: VecEnv,
    scalars: Path,
    algo: str,
    build: Callable[[VecNormalize], ModelT],
    normalizer: type[VecNormalize] = VecNormalize,
) -> tuple[ModelT, VecNormalize]:
    """The checkpoint's model and normaliser on fresh envs; its scalars copied to `scalars`, so
    the resumed run's metrics go on from the checkpoint's.

    `build` makes the model from the run's own settings (hyperparameters and schedules are
    code, not data read from the checkpoint); the checkpoint supplies the weights, optimizer
    states and counters; `normalizer` is the VecNormalize class the run trains with."""
    vecnorm = load_vecnormalize(resume_dir / "vecnormalize.npz", venv, normalizer)
    vecnorm.training = True
    # The model `build` made (load_model checks it), with the checkpoint's weights loaded.
    model = cast(ModelT, load_model(algo, resume_dir / "model.zip", vecnorm, build=build))
    model.set_logger(Logger(folder=None, output_formats=[]))
    if (resume_dir / "scalars.jsonl").exists():
        scalars.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(resume_dir / "scalars.jsonl", scalars)
    return model, vecnorm


def warm_start(model: PPO, venv: VecNormalize, init_dir: Path) -> bool:
    """Start from a previous run's weights and normaliser statistics, keeping this run's own
    hyperparameters and a fresh timestep counter. False (and a fresh policy) when the networks
    differ, e.g. a config with a wider net, or the files are not a policyforge policy."""
    try:
        loaded = load_vecnormalize(init_dir / "vecnormalize.npz", venv.venv)
        if loaded.norm_obs != venv.norm_obs:
            return False
        load_weights(model, init_dir / "model.zip")
    except ValueError:
        return False
    if venv.norm_obs:
        venv.obs_rms = loaded.obs_rms
    venv.ret_rms = loaded.ret_rms
    return True
