"""Evaluation checkpoints at 25/50/75/100% of training: run inside the child only.

At each point (right after a PPO update) the current model and VecNormalize are saved to
`evals/pct_<p>/`, the policy plays `episodes` deterministic episodes in lockstep (seeds
0..n-1, the session's reward, at most `max_steps` steps, one batched policy call a step), and
the episodes at the 10th percentile, median and 90th percentile of the return are kept as
`p10|median|p90.npz` (the evaluation trajectory format) and `.mp4` (drawn from the recorded
states, the first `video_frames` frames at `video_size` px: software rendering is the slow
part). `returns.json` lists every episode.

With `handoff`, the training child only saves the policy and leaves a marker
(`handoff/pct_<p>.json`); the evaluator beside training (`side_eval.py`) plays and keeps the
checkpoint on the other core while training goes on.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from activities.training.checkpoints import save_policy
from activities.training.evaluation import deterministic_act
from activities.training.reward_runtime import LoadedReward, Rewards
from activities.training.rollout import collect_many, save_trajectory
from activities.training.sim import make_env
from activities.training.video import Clip, render_videos

FRACTIONS = (0.25, 0.5, 0.75, 1.0)
PICKS = (("p10", 0.1), ("median", 0.5), ("p90", 0.9))
HANDOFF = "handoff"  # the training child's folder of handed-over checkpoints (not uploaded)
# In the training child's output folder: the activity saw a checkpoint pass (stop_at_pass.py).
STOP = "stop_at_pass.json"
VIDEO_SIZE = 240
VIDEO_FRAMES = 150


def checkpoint_folder(out_dir: Path, pct: int) -> Path:
    """Where the checkpoint at pct% of training keeps its policy, episodes and videos."""
    return out_dir / "evals" / f"pct_{pct}"


def keep_checkpoint(
    folder: Path,
    env_id: str,
    reward: Rewards | LoadedReward,
    act: Callable[[np.ndarray], np.ndarray],
    *,
    episodes: int,
    max_steps: int | None,
    fraction: float,
    timesteps: int,
    video_size: int = VIDEO_SIZE,
    video_frames: int = VIDEO_FRAMES,
) -> dict[str, Any]:
    """Play a checkpoint's episodes and keep its picks and returns.json in `folder` (see the
    module docstring); the returns.json summary."""
    seeds = list(range(episodes))
    envs = [make_env(env_id, reward) for _ in seeds]
    try:
        played = collect_many(envs, act, seeds, max_steps)
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
    clips: list[Clip] = []
    for name, q in PICKS:
        ret, seed, arrays, stats = runs[round(q * (len(runs) - 1))]
        save_trajectory(folder / f"{name}.npz", arrays)
        clips.append(Clip(seed, arrays, folder / f"{name}.mp4", video_frames))
        picked[name] = {"seed": seed, "return": ret, "length": stats["episode_length"]}
    render_videos(env_id, clips, size=video_size)
    summary = {
        "fraction": fraction,
        "timesteps": timesteps,
        "returns": [r[0] for r in sorted(runs, key=lambda r: r[1])],
        "picked": picked,
    }
    (folder / "returns.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def stop_requested(out: Path) -> dict[str, Any] | None:
    """The stop marker's content once the activity has written it (the engine looks after
    each update)."""
    path = out / STOP
    return json.loads(path.read_text()) if path.exists() else None


# The files of a kept checkpoint's policy (save_policy): what the final evaluation, resume and
# warm start load.
POLICY_FILES = ("model.zip", "vecnormalize.npz")


def keep_checkpoint_policy(out_dir: Path, pct: int) -> bool:
    """The policy kept at pct% of training made the run's policy (its files over the final
    ones); False, leaving the final policy, when that checkpoint kept no policy here."""
    kept = checkpoint_folder(out_dir, pct)
    if not (kept / POLICY_FILES[0]).exists():
        return False
    for name in POLICY_FILES:
        if (kept / name).exists():
            shutil.copyfile(kept / name, out_dir / name)
        else:
            (out_dir / name).unlink(missing_ok=True)
    return True


def write_marker(path: Path, content: dict[str, Any]) -> None:
    """A JSON file that appears whole or not at all (a reader polls for it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(content))
    os.replace(partial, path)


def pct_of(fraction: float) -> int:
    """The whole percent a checkpoint is kept under (`evals/pct_<p>`): 1 at least."""
    return max(1, round(fraction * 100))


def checkpoint_fractions(total: int, early_steps: int = 0) -> list[float]:
    """FRACTIONS, and among them, up to half the budget, points at `early_steps`, twice and
    four times that ... (where a run may stop at pass from `early_steps` on: an easy case stops
    there whatever its budget), in order, each kept under a percent of its own.

    Doubling up to half the budget, not only up to its first quarter: Walker2d "walk forward
    naturally" on a 1M budget did not pass at 200k or 250k (its rate still high under a
    schedule that decays over 1M) and the next point was 500k, 173 s where the 200k-step
    budget of before had passed in 84 s; 400k sits between them."""
    early: list[float] = []
    steps = early_steps
    while 0 < steps < FRACTIONS[1] * total:
        early.append(steps / total)
        steps *= 2
    out: list[float] = []
    for fraction in sorted((*early, *FRACTIONS)):
        if all(pct_of(fraction) != pct_of(f) for f in out):
            out.append(fraction)
    return out


class EvalSchedule:
    """Which checkpoints (checkpoint_fractions) are still due in a run of `total` steps that
    starts at `done` (a resumed run skips the points its earlier attempt passed; the last is
    always due)."""

    def __init__(self, total: int, done: int, early_steps: int = 0) -> None:
        self.total = total
        fractions = checkpoint_fractions(total, early_steps)
        self.todo = [f for f in fractions if f * total > done or f == 1.0]

    def passed(self, steps: int) -> list[float]:
        """The points before the end that `steps` reached, each once."""
        due = []
        while self.todo and self.todo[0] < 1.0 and steps >= self.todo[0] * self.total:
            due.append(self.todo.pop(0))
        return due

    def end(self) -> list[float]:
        """At the end of training: the last point, unless it was already kept."""
        due = [1.0] if self.todo else []
        self.todo.clear()
        return due


def hand_over(out_dir: Path, pct: int, fraction: float, timesteps: int) -> None:
    """The marker that hands the policy saved in checkpoint_folder(out_dir, pct) to the
    evaluator beside training (side_eval.py)."""
    marker = {"pct": pct, "fraction": fraction, "timesteps": timesteps}
    write_marker(out_dir / HANDOFF / f"pct_{pct}.json", marker)


class EvalCheckpoints(BaseCallback):
    """Plays and keeps the evaluation checkpoints' episodes at 25/50/75/100% of training, and
    the early points of checkpoint_fractions (see the module docstring)."""

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
        handoff: bool = False,
        early_steps: int = 0,
    ) -> None:
        super().__init__()
        self.env_id = env_id
        self.reward = reward
        self.total = total
        self.out_dir = out_dir
        self.emit = emit
        self.episodes = episodes
        self.max_steps = max_steps
        self.handoff = handoff
        self.early_steps = early_steps
        self._schedule = EvalSchedule(total, 0, early_steps)
        self.seconds = 0.0  # spent in checkpoints, inside training's wall time

    def _init_callback(self) -> None:
        self._schedule = EvalSchedule(self.total, self.num_timesteps, self.early_steps)

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        for fraction in self._schedule.passed(self.num_timesteps):
            self._checkpoint(fraction)

    def _on_training_end(self) -> None:
        for fraction in self._schedule.end():
            self._checkpoint(fraction)

    def _checkpoint(self, fraction: float) -> None:
        started = time.monotonic()
        try:
            self._play(fraction)
        finally:
            self.seconds += time.monotonic() - started

    def _play(self, fraction: float) -> None:
        pct = pct_of(fraction)
        folder = checkpoint_folder(self.out_dir, pct)
        save_policy(self.model, folder)
        timesteps = int(self.num_timesteps)
        if self.handoff:
            hand_over(self.out_dir, pct, fraction, timesteps)
            self.emit({"event": "eval_handoff", "pct": pct, "timesteps": timesteps})
            return
        act = deterministic_act(self.model, self.model.get_vec_normalize_env())
        keep_checkpoint(
            folder,
            self.env_id,
            self.reward,
            act,
            episodes=self.episodes,
            max_steps=self.max_steps,
            fraction=fraction,
            timesteps=timesteps,
        )
        self.emit({"event": "eval_checkpoint", "pct": pct, "timesteps": timesteps})
