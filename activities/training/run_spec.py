"""What one training or evaluation run is asked to do, as one value each.

`job.py` builds them once from the child's request; `ppo.train`, `offpolicy.train` and
`rollout.evaluate` take them instead of a dozen parameters. Light on imports: no torch, no SB3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TrainJob:
    """A training run's settings (the reward and the progress stream come beside it)."""

    env_id: str
    timesteps: int
    seed: int
    out_dir: Path
    # "ppo", "sac" or "td3".
    algo: str = "ppo"
    # PPO settings over the env's preset (see presets.py); the off-policy algorithms ignore it.
    ppo_overrides: dict[str, Any] = field(default_factory=dict)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    progress_interval_s: float = 2.0
    # Checkpoint every this many timesteps (0: never); resume from a checkpoint folder.
    checkpoint_every: int = 0
    resume_dir: Path | None = None
    # PPO only: warm start from a folder with model.zip and vecnormalize.npz.
    init_dir: Path | None = None
    # PPO only: one deterministic episode of the env's own reward every this many timesteps.
    eval_every: int = 0
    # Evaluation checkpoints at 25/50/75/100%: episodes each (0: none), at most this long.
    eval_checkpoint_episodes: int = 0
    eval_max_steps: int | None = None
    # ... and the early points from this many steps on (eval_checkpoints.checkpoint_fractions).
    early_eval_steps: int = 0
    # Hand the checkpoints to the evaluator beside training instead (see eval_checkpoints.py).
    eval_handoff: bool = False


@dataclass(frozen=True)
class EvalJob:
    """An evaluation's settings: one deterministic episode of a trained policy."""

    env_id: str
    model_path: Path
    vecnormalize_path: Path
    out_dir: Path
    seed: int = 0
    max_steps: int | None = None
    record_video: bool = True
    video_size: int = 480
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    algo: str = "ppo"
