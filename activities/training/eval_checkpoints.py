"""Evaluation checkpoints at 25/50/75/100% of training: run inside the child only.

At each point (right after a PPO update) the current model and VecNormalize are saved to
`evals/pct_<p>/`, the policy plays `episodes` deterministic episodes in lockstep (seeds
0..n-1, the session's reward, at most `max_steps` steps, one batched policy call a step), and
the episodes at the 10th percentile, median and 90th percentile of the return are kept as
`p10|median|p90.npz` (the evaluation trajectory format) and `.mp4` (drawn from the recorded
states, the first `video_frames` frames at `video_size` px: software rendering is the slow
part). `returns.json` lists every episode.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from activities.training.checkpoints import save_policy
from activities.training.evaluation import deterministic_act
from activities.training.reward_runtime import LoadedReward, Rewards
from activities.training.rollout import (
    Mp4Writer,
    collect_many,
    render_states,
    save_trajectory,
    video_stride,
)
from activities.training.sim import make_env, mujoco_env

FRACTIONS = (0.25, 0.5, 0.75, 1.0)
PICKS = (("p10", 0.1), ("median", 0.5), ("p90", 0.9))


class EvalCheckpoints(BaseCallback):
    """Plays and keeps the evaluation checkpoints' episodes at 25/50/75/100% of training (see
    the module docstring)."""

    def __init__(
        self,
        env_id: str,
        reward: Rewards | LoadedReward,
        total: int,
        out_dir: Path,
        emit: Callable[[dict[str, Any]], None],
        *,
        episodes: int = 5,
        max_steps: int | None = None,
        video_size: int = 240,
        video_frames: int = 150,
    ) -> None:
        super().__init__()
        self.env_id = env_id
        self.reward = reward
        self.total = total
        self.out_dir = out_dir
        self.emit = emit
        self.episodes = episodes
        self.max_steps = max_steps
        self.video_size = video_size
        self.video_frames = video_frames
        self._todo = list(FRACTIONS)
        self.seconds = 0.0  # spent in checkpoints, inside training's wall time

    def _init_callback(self) -> None:
        # A resumed run skips the points its earlier attempt already passed.
        self._todo = [f for f in FRACTIONS if f * self.total > self.num_timesteps or f == 1.0]

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        while (
            self._todo and self._todo[0] < 1.0 and self.num_timesteps >= self._todo[0] * self.total
        ):
            self._checkpoint(self._todo.pop(0))

    def _on_training_end(self) -> None:
        if self._todo:
            self._checkpoint(1.0)
            self._todo.clear()

    def _checkpoint(self, fraction: float) -> None:
        started = time.monotonic()
        try:
            self._play(fraction)
        finally:
            self.seconds += time.monotonic() - started

    def _play(self, fraction: float) -> None:
        pct = round(fraction * 100)
        folder = self.out_dir / "evals" / f"pct_{pct}"
        save_policy(self.model, folder)
        act = deterministic_act(self.model, self.model.get_vec_normalize_env())
        seeds = list(range(self.episodes))
        envs = [make_env(self.env_id, self.reward) for _ in seeds]
        try:
            played = collect_many(envs, act, seeds, self.max_steps)
        finally:
            for env in envs:
                env.close()
        runs = sorted(
            (
                (stats["episode_return"], seed, arrays, stats)
                for seed, (arrays, stats) in zip(seeds, played, strict=True)
            ),
            key=lambda r: r[0],
        )
        picked: dict[str, Any] = {}
        for name, q in PICKS:
            ret, seed, arrays, stats = runs[round(q * (len(runs) - 1))]
            save_trajectory(folder / f"{name}.npz", arrays)
            self._video(arrays, seed, folder / f"{name}.mp4")
            picked[name] = {"seed": seed, "return": ret, "length": stats["episode_length"]}
        summary = {
            "fraction": fraction,
            "timesteps": int(self.num_timesteps),
            "returns": [r[0] for r in sorted(runs, key=lambda r: r[1])],
            "picked": picked,
        }
        (folder / "returns.json").write_text(json.dumps(summary, indent=2) + "\n")
        self.emit({"event": "eval_checkpoint", "pct": pct, "timesteps": int(self.num_timesteps)})

    def _video(self, arrays: dict[str, np.ndarray], seed: int, path: Path) -> None:
        env = make_env(self.env_id, None, render_size=self.video_size)
        stride, fps = video_stride(float(mujoco_env(env).dt))
        writer = Mp4Writer(path, fps)
        try:
            render_states(env, seed, arrays, self.video_frames * stride, writer, stride)
        finally:
            env.close()
            writer.close()
