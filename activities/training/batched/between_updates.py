"""What a training run on the engine does between updates, besides learning: evaluation
checkpoints (handed over or played here), bench-train's periodic evaluations and a time
budget's plan. `run.train_members` calls each after every update.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from activities.runner.protocol import ChildRequest
from activities.training.batched.export import global_rngs_kept, save_candidate
from activities.training.batched.ppo import BatchedPPO
from activities.training.eval_checkpoints import (
    EvalSchedule,
    checkpoint_folder,
    hand_over,
    pct_of,
)
from activities.training.reward_runtime import ColumnRewards

Emit = Callable[[dict[str, Any]], None]
PLAN_AFTER_S = 3.0  # a time budget's steps are planned from the speed measured this long


def next_multiple(done: int, every: int) -> int:
    """The first multiple of `every` after `done` (0 when `every` is 0: never)."""
    return (done // every + 1) * every if every > 0 else 0


class TimePlan:
    """Steps planned to fit `seconds` of training: after the first updates (PLAN_AFTER_S of
    training at least), the budget becomes what the measured speed trains in the time left,
    whole updates, at most the request's timesteps; training past the time by a tenth stops."""

    def __init__(self, seconds: float, ppo: BatchedPPO, evals: EvalPoints, emit: Emit) -> None:
        self.seconds, self.ppo, self.evals, self.emit = seconds, ppo, evals, emit
        self.start = ppo.steps_done
        self.cap = ppo.timesteps
        self.planned: int | None = None
        self.rate = 0.0
        self.overran = False  # stopped before the plan: training ran past its time by a tenth

    def after_update(self, elapsed: float) -> None:
        p = self.ppo
        if self.planned is None and (elapsed >= PLAN_AFTER_S or elapsed >= self.seconds / 4):
            self.rate = (p.steps_done - self.start) / max(elapsed, 1e-9)
            per_update = p.t * p.e
            left = max(0.0, self.seconds - elapsed) * self.rate
            updates = max(1, int(left // per_update))
            self.planned = min(self.cap, p.steps_done + updates * per_update)
            p.timesteps = self.planned
            self.evals.replan(self.planned)
            self.emit(
                {
                    "event": "planned",
                    "timesteps": self.planned,
                    "steps_per_second": round(self.rate, 1),
                    "seconds": self.seconds,
                }
            )
        # The update that reached the plan is not an overrun, however late it ended.
        if elapsed > 1.1 * self.seconds and not p.stopped and p.steps_done < p.timesteps:
            p.stopped = self.overran = True

    def record(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "steps_per_second": round(self.rate, 1),
            "planned_timesteps": self.planned,
            "cap": self.cap,
            "overran": self.overran,
        }


class PeriodicEvals:
    """bench-train's protocol (`evaluation.PeriodicEval`): after the first update at or past each
    multiple of eval_every steps, and at the end, one deterministic episode of the env's own
    return per member, its time off the training clock; metrics/evals.jsonl and "eval" events."""

    def __init__(
        self, req: ChildRequest, ppo: BatchedPPO, folders: list[Path], emit: Emit, t0: float
    ) -> None:
        from activities.training.batched.envs import BatchEnvs

        self.ppo, self.folders, self.emit, self.t0 = ppo, folders, emit, t0
        self.every, self.seed = req.eval_every, req.seed
        self.envs = BatchEnvs(req.env_id, ppo.k, req.seed, env_kwargs=req.env_kwargs)
        self.next = next_multiple(ppo.steps_done, self.every)
        self.seconds = 0.0
        self.last = -1
        for folder in folders:
            (folder / "metrics").mkdir(parents=True, exist_ok=True)

    def passed(self, steps: int) -> None:
        if steps >= self.next:
            self.next = next_multiple(steps, self.every)
            self._evaluate()

    def finished(self) -> None:
        if self.last != self.ppo.steps_done:
            self._evaluate()
        self.envs.close()

    def _evaluate(self) -> None:
        from activities.training.batched.evaluate import evaluate_candidates

        started = time.monotonic()
        wall = started - self.t0 - self.seconds
        results = evaluate_candidates(self.ppo, self.seed, self.envs)
        spent = time.monotonic() - started
        self.seconds += spent
        self.last = self.ppo.steps_done
        for cand, folder, res in zip(self.ppo.candidates, self.folders, results, strict=True):
            row = {
                "timesteps": self.ppo.steps_done,
                "train_wall_s": round(wall, 3),
                **res,
                "eval_s": round(spent / self.ppo.k, 3),
            }
            with (folder / "metrics" / "evals.jsonl").open("a") as f:
                f.write(json.dumps(row) + "\n")
            self.emit({"event": "eval", "member": cand.name, **row})


class EvalPoints:
    """The members' evaluation checkpoints when training passes 25/50/75% of its steps and at
    its end: handed over to the evaluator beside training (eval_handoff), or played here when
    eval_checkpoint_episodes asks for them without one (none otherwise)."""

    def __init__(self, req: ChildRequest, ppo: BatchedPPO, folders: list[Path], emit: Emit) -> None:
        self.req, self.ppo, self.folders, self.emit = req, ppo, folders, emit
        due = req.eval_handoff or req.eval_checkpoint_episodes > 0
        early = req.early_eval_steps
        self.schedule = EvalSchedule(ppo.timesteps, ppo.steps_done, early) if due else None
        self.seconds = 0.0  # the batch's time handing over, inside its wall time

    def passed(self, steps: int) -> None:
        for fraction in self.schedule.passed(steps) if self.schedule else []:
            self._hand_over(fraction)

    def replan(self, total: int) -> None:
        """The run's budget changed (a time plan): the points still due move with it."""
        if self.schedule is not None:
            self.schedule.total = total

    def finished(self) -> None:
        for fraction in self.schedule.end() if self.schedule else []:
            self._hand_over(fraction)

    def _hand_over(self, fraction: float) -> None:
        started = time.monotonic()
        pct, steps = pct_of(fraction), self.ppo.steps_done
        for k, (cand, folder) in enumerate(zip(self.ppo.candidates, self.folders, strict=True)):
            # Kept from the exported files: the policy the session would get at this point.
            kept = checkpoint_folder(folder, pct)
            save_candidate(self.ppo, k, kept)
            if self.req.eval_handoff:
                hand_over(folder, pct, fraction, steps)
                event = "eval_handoff"
            else:
                self._play(cand.rewards, kept, fraction, steps)
                event = "eval_checkpoint"
            self.emit({"event": event, "member": cand.name, "pct": pct, "timesteps": steps})
        self.seconds += time.monotonic() - started

    def _play(self, rewards: ColumnRewards, folder: Path, fraction: float, steps: int) -> None:
        """Play and keep the checkpoint here, as the evaluator beside training would."""
        from activities.training.eval_checkpoints import keep_checkpoint
        from activities.training.side_eval import saved_policy

        # Loading and playing must not move the generators training draws its noise from.
        with global_rngs_kept():
            keep_checkpoint(
                folder,
                self.req.env_id,
                rewards,
                saved_policy(self.req, folder),
                episodes=self.req.eval_checkpoint_episodes,
                max_steps=self.req.max_steps,
                fraction=fraction,
                timesteps=steps,
            )
