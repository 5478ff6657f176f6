"""A session's batched training run, inside the training child (`job.TRAIN_BATCH`).

The members of one request (candidates x configs of one seed that share a batch shape) train
together in a `BatchedPPO`, each reward in its own sandbox. Like today's single run it emits
progress, writes a resumable checkpoint every `checkpoint_every` steps (of every member:
`state.py`) and resumes from one; at the end each member gets the files a single run writes,
in <out>/<member name>/: model.zip and vecnormalize.npz (plain SB3), summary.json and
scalars.jsonl. With `eval_handoff`, at 25/50/75/100% of training each member's policy is
exported into <member>/evals/pct_<p>/ and handed over (<member>/handoff/pct_<p>.json) to the
evaluator beside the batch (`side_eval.evaluate_members_beside`), which keeps a single run's
evaluation checkpoint there under the member's own reward.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from activities.runner.protocol import ChildRequest
from activities.sandbox.client import SandboxClient, SandboxRewards
from activities.training.batched.export import save_candidate
from activities.training.batched.ppo import BatchedPPO, Candidate, CandidateStats
from activities.training.batched.state import load_state, save_state
from activities.training.eval_checkpoints import EvalSchedule, checkpoint_folder, hand_over
from activities.training.presets import preset_for
from workflows.contracts.keys import SCALARS, SUMMARY

Emit = Callable[[dict[str, Any]], None]
WINDOW = 20  # episodes in a member's mean return (as the single run's MetricsCallback)


def train_batch(req: ChildRequest, boxes: list[SandboxClient], out: Path, emit: Emit) -> dict:
    """Train the request's members together (see the module docstring); the result."""
    if req.algo != "ppo":
        raise ValueError(f"batched training is PPO only (got algo {req.algo!r})")
    if len(boxes) != len(req.members):
        raise ValueError(f"{len(req.members)} members need as many sandboxes, got {len(boxes)}")
    candidates = [
        Candidate(
            m.name,
            SandboxRewards(box, m.reward_source, m.reward_filename, strict=False),
            preset_for(req.env_id, m.ppo),
        )
        for m, box in zip(req.members, boxes, strict=True)
    ]
    ppo = BatchedPPO(req.env_id, candidates, req.timesteps, req.seed, env_kwargs=req.env_kwargs)
    resumed: int | None = None
    scalars: list[list[dict[str, Any]]] = [[] for _ in candidates]
    if req.resume_dir:
        resumed, extra = load_state(ppo, Path(req.resume_dir))
        scalars = extra.get("scalars", scalars)  # the rows the first attempt wrote
        emit({"event": "resumed", "timesteps": resumed})
    clock = {"last_progress": 0.0, "next_checkpoint": _next(ppo.steps_done, req.checkpoint_every)}
    evals = _EvalPoints(req, ppo, out, emit)
    t0 = time.monotonic()

    def after_update(p: BatchedPPO) -> None:
        for k, stats in enumerate(p.stats):
            scalars[k].append(_scalar_row(p.steps_done, stats))
        now = time.monotonic()
        if now - clock["last_progress"] >= req.progress_interval_s or p.steps_done >= p.timesteps:
            clock["last_progress"] = now
            means = [_mean(s.returns[-WINDOW:]) for s in p.stats]
            known = [m for m in means if m is not None]
            emit(
                {
                    "event": "progress",
                    "timesteps": p.steps_done,
                    "mean_return": max(known) if known else None,
                    "member_returns": means,
                }
            )
        # Evaluation points first: a retry that resumes from this checkpoint skips them.
        evals.passed(p.steps_done)
        if req.checkpoint_every and clock["next_checkpoint"] <= p.steps_done < p.timesteps:
            folder = f"checkpoint_{p.steps_done}"
            save_state(p, out / folder, {"scalars": scalars})
            emit({"event": "checkpoint", "dir": folder, "timesteps": p.steps_done})
            clock["next_checkpoint"] = _next(p.steps_done, req.checkpoint_every)

    torch.set_num_threads(1)
    ppo.learn(after_update)
    evals.finished()
    wall = time.monotonic() - t0
    trained = ppo.steps_done - (resumed or 0)
    members: dict[str, Any] = {}
    for k, cand in enumerate(candidates):
        folder = out / cand.name
        save_candidate(ppo, k, folder)
        rows = scalars[k]
        (folder / SCALARS).parent.mkdir(parents=True, exist_ok=True)
        (folder / SCALARS).write_text("".join(json.dumps(r) + "\n" for r in rows))
        summary = _summary(req, ppo, k, wall, trained, resumed)
        summary["eval_checkpoint_seconds"] = round(evals.seconds, 2)
        (folder / SUMMARY).write_text(json.dumps(summary))
        members[cand.name] = json.loads((folder / SUMMARY).read_text())
    ppo.close()
    return {
        "members": members,
        "timesteps_done": ppo.steps_done,
        "wall_seconds": round(wall, 2),
        "steps_per_second": round(len(candidates) * trained / max(wall, 1e-9), 1),
        "seconds": {k: round(v, 2) for k, v in ppo.seconds.items()},
    }


class _EvalPoints:
    """The members' evaluation checkpoints handed over when training passes 25/50/75% of its
    steps and at its end (none without eval_handoff: nothing would keep them)."""

    def __init__(self, req: ChildRequest, ppo: BatchedPPO, out: Path, emit: Emit) -> None:
        self.ppo, self.out, self.emit = ppo, out, emit
        self.schedule = EvalSchedule(ppo.timesteps, ppo.steps_done) if req.eval_handoff else None
        self.seconds = 0.0  # the batch's time handing over, inside its wall time

    def passed(self, steps: int) -> None:
        for fraction in self.schedule.passed(steps) if self.schedule else []:
            self._hand_over(fraction)

    def finished(self) -> None:
        for fraction in self.schedule.end() if self.schedule else []:
            self._hand_over(fraction)

    def _hand_over(self, fraction: float) -> None:
        started = time.monotonic()
        pct, steps = round(fraction * 100), self.ppo.steps_done
        for k, cand in enumerate(self.ppo.candidates):
            # Kept from the exported files: the policy the session would get at this point.
            save_candidate(self.ppo, k, checkpoint_folder(self.out / cand.name, pct))
            hand_over(self.out / cand.name, pct, fraction, steps)
            self.emit(
                {"event": "eval_handoff", "member": cand.name, "pct": pct, "timesteps": steps}
            )
        self.seconds += time.monotonic() - started


def _next(done: int, every: int) -> int:
    return (done // every + 1) * every if every > 0 else 0


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _scalar_row(steps: int, stats: CandidateStats) -> dict[str, Any]:
    return {
        "timesteps": steps,
        "mean_return": _mean(stats.returns[-WINDOW:]),
        "mean_env_return": _mean(stats.env_returns[-WINDOW:]),
        "mean_length": _mean([float(n) for n in stats.lengths[-WINDOW:]]),
    }


def _summary(
    req: ChildRequest, ppo: BatchedPPO, k: int, wall: float, trained: int, resumed: int | None
) -> dict[str, Any]:
    """summary.json for member k: the single run's fields, with the batch's wall time."""
    stats = ppo.stats[k]
    returns = stats.returns
    half = len(returns) // 2
    quarter = max(1, len(returns) // 4)
    improving = bool(
        half
        and np.mean(returns[-quarter:])
        > np.mean(returns[-2 * quarter : -quarter])
        + 0.01 * abs(np.mean(returns[-2 * quarter : -quarter]))
    )
    term_means = {
        name: total / max(stats.transitions, 1) for name, total in stats.term_sums.items()
    }
    return {
        "env_id": req.env_id,
        "timesteps": req.timesteps,
        "timesteps_done": ppo.steps_done,
        "wall_seconds": round(wall, 2),
        # This member's own steps per second of the batch's wall time.
        "steps_per_second": round(trained / max(wall, 1e-9), 1),
        "resumed_from_timesteps": resumed,
        "mean_episode_return": _mean(returns[-WINDOW:]),
        "mean_env_return": _mean(stats.env_returns[-WINDOW:]),
        "episodes": len(returns),
        "term_means": term_means,
        "still_improving": improving,
        "seed": req.seed,
        "hyperparameters": {"algo": "ppo", **ppo.presets[k].as_dict()},
        "env_kwargs": dict(req.env_kwargs),
        "batch": {"members": [c.name for c in ppo.candidates], "index": k},
        "reward_terms": ppo.candidates[k].rewards.terms,
        "torch_threads": torch.get_num_threads(),
    }
