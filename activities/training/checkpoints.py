"""Checkpoints of a training run, and resuming from one: run inside the child only.

Every `every` timesteps, right after a PPO update (so every counted step has been trained on),
the child writes `checkpoints/step_<n>/` with model.zip (policy, optimizer state and the
timestep counter), vecnormalize.pkl (observation and return statistics) and scalars.jsonl so
far, then emits {"event": "checkpoint", "timesteps": n, "dir": ...}. The activity uploads it
to S3 and heartbeats its key; a retried activity downloads it and passes it back as
`resume_dir`, and training continues from that counter.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import VecEnv, VecNormalize


def next_multiple(n: int, every: int) -> int:
    """The first multiple of `every` after `n`: where a periodic callback fires next."""
    return (n // every + 1) * every


def save_policy(model: BaseAlgorithm, folder: Path) -> None:
    """model.zip, and vecnormalize.pkl when the model has one: what resume and evaluate load."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save(folder / "model.zip")
    venv = model.get_vec_normalize_env()
    if venv is not None:
        venv.save(str(folder / "vecnormalize.pkl"))


class CheckpointCallback(BaseCallback):
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
    resume_dir: Path, venv: VecEnv, scalars: Path, algo: type[BaseAlgorithm] = PPO
) -> tuple[BaseAlgorithm, VecNormalize]:
    """The checkpoint's model and normaliser on fresh envs; its scalars copied to `scalars`, so
    the resumed run's metrics go on from the checkpoint's."""
    vecnorm = VecNormalize.load(str(resume_dir / "vecnormalize.pkl"), venv)
    vecnorm.training = True
    model = algo.load(str(resume_dir / "model.zip"), env=vecnorm, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    if (resume_dir / "scalars.jsonl").exists():
        scalars.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(resume_dir / "scalars.jsonl", scalars)
    return model, vecnorm


def warm_start(model: PPO, venv: VecNormalize, init_dir: Path) -> bool:
    """Start from a previous run's weights and normaliser statistics, keeping this run's own
    hyperparameters and a fresh timestep counter. False (and a fresh policy) when the networks
    differ in shape, e.g. a config with a wider net."""
    try:
        model.set_parameters(str(init_dir / "model.zip"), exact_match=True, device="cpu")
    except (RuntimeError, ValueError):
        return False
    loaded = VecNormalize.load(str(init_dir / "vecnormalize.pkl"), venv.venv)
    venv.obs_rms, venv.ret_rms = loaded.obs_rms, loaded.ret_rms
    return True
