"""Training runs on the batched engine, inside the training child: a batch of reward
candidates (`job.TRAIN_BATCH`) or a session's single PPO run (`job.TRAIN`, a batch of one).

The members of one request (candidates x configs of one seed that share a batch shape) train
together in a `BatchedPPO`, each reward in its own sandbox, physics on `threads` cores and the
networks and update on the request's `device` (the CPU's cores, or a GPU). A run emits
progress, writes a resumable checkpoint every `checkpoint_every` steps (of every member:
`state.py`) and resumes from one; at the end each member gets the files the SB3 trainer writes,
in its folder (<out>/<member name>/, or <out> itself for a single run): model.zip and
vecnormalize.npz (plain SB3), summary.json, metrics/scalars.jsonl (SB3's names) and
TensorBoard events. Between updates (`between_updates.py`) it keeps the evaluation
checkpoints at 25/50/75/100% (handed over to the evaluator beside it with `eval_handoff`),
plans its steps from a time budget (`max_seconds`), and stops early when the activity has
seen a checkpoint pass (the marker `stop_at_pass.json` in <out>).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from activities.envs.meanings import terminates_early
from activities.runner.protocol import ChildRequest
from activities.sandbox.client import SandboxClient
from activities.training.batched.between_updates import (
    EvalPoints,
    PeriodicEvals,
    TimePlan,
    next_multiple,
)
from activities.training.batched.candidates import Candidate, CandidateStats
from activities.training.batched.export import save_candidate
from activities.training.batched.ppo import BatchedPPO
from activities.training.batched.state import load_state, save_state
from activities.training.batched.warm import warm_or_cold
from activities.training.board import Board
from activities.training.checked_shaping import member_rewards
from activities.training.core_share import threads_asked
from activities.training.eval_checkpoints import keep_checkpoint_policy, stop_requested
from activities.training.free_cores import FreeCores
from activities.training.ppo import final_term_means
from activities.training.presets import preset_for
from activities.training.reward_runtime import ColumnRewards, reward_counts
from workflows.contracts.keys import SCALARS, SUMMARY

Emit = Callable[[dict[str, Any]], None]
SINGLE = "run"  # the one candidate of a single run
WINDOW = 20  # episodes in a member's mean return (as the single run's MetricsCallback)


def train_batch(req: ChildRequest, boxes: list[SandboxClient], out: Path, emit: Emit) -> dict:
    """Train the request's members together (see the module docstring); the result."""
    if len(boxes) != len(req.members):
        raise ValueError(f"{len(req.members)} members need as many sandboxes, got {len(boxes)}")
    candidates = [
        Candidate(
            m.name,
            member_rewards(box, m),
            preset_for(req.env_id, m.ppo),
        )
        for m, box in zip(req.members, boxes, strict=True)
    ]
    folders = [out / c.name for c in candidates]
    return train_members(req, candidates, folders, out, emit, drop_faulty=True)


def train_single(
    req: ChildRequest, rewards: ColumnRewards, out: Path, emit: Emit, threads: int
) -> dict[str, Any]:
    """A session's single PPO run through the same engine (K=1), its files at the top of `out`
    as the SB3 trainer wrote them, physics and update on `threads` cores; its summary."""
    candidate = Candidate(SINGLE, rewards, preset_for(req.env_id, req.ppo))
    result = train_members(req, [candidate], [out], out, emit, threads=threads)
    summary: dict[str, Any] = result["members"][SINGLE]
    return summary


def train_members(
    req: ChildRequest,
    candidates: list[Candidate],
    folders: list[Path],
    out: Path,
    emit: Emit,
    *,
    threads: int = 1,
    drop_faulty: bool = False,
) -> dict[str, Any]:
    """Train `candidates` together, each one's files into its folder, checkpoints into `out`
    (see the module docstring); the result. `drop_faulty`: a candidate whose reward fails
    is dropped and the others train on (its summary carries the error)."""
    if req.algo != "ppo":
        raise ValueError(f"batched training is PPO only (got algo {req.algo!r})")
    # The worker's share may have changed since the request was written (another run started
    # meanwhile): a first rollout on more threads than that crawls (265 steps/s where 1 thread
    # gave 8,000), so the marker rules from the start.
    free = FreeCores()
    threads = threads_asked(out) or threads
    torch.set_num_threads(threads)
    ppo = BatchedPPO(
        req.env_id,
        candidates,
        req.timesteps,
        req.seed,
        env_kwargs=req.env_kwargs,
        threads=threads,
        drop_faulty=drop_faulty,
        device=req.device,
    )
    resumed: int | None = None
    scalars: list[list[dict[str, Any]]] = [[] for _ in candidates]
    # Per member: whether it started from the previous policy (None: none was given).
    warm: list[dict[str, Any] | None] = [None] * len(candidates)
    if req.init_dir and not req.resume_dir:
        # Every member from the same previous policy (a resumed run has its own state).
        decided = [warm_or_cold(ppo, k, Path(req.init_dir), req.seed) for k in range(ppo.k)]
        for cand, what in zip(candidates, decided, strict=True):
            emit({"event": "warm_start", "member": cand.name, **what})
        warm = list(decided)
    if req.resume_dir:
        resumed, extra = load_state(ppo, Path(req.resume_dir))
        scalars = extra.get("scalars", scalars)  # the rows the first attempt wrote
        warm = extra.get("warm_start") or warm
        emit({"event": "resumed", "timesteps": resumed})
    evals = EvalPoints(req, ppo, folders, emit)
    boards = [Board(folder / "tensorboard") for folder in folders]
    t0 = time.monotonic()
    periodic = PeriodicEvals(req, ppo, folders, emit, t0) if req.eval_every > 0 else None
    stopped: dict[str, int] = {}  # the checkpoint (pct) whose pass stopped training
    planner = TimePlan(req.max_seconds, ppo, evals, emit) if req.max_seconds > 0 else None
    clock = {
        "last_progress": 0.0,
        "next_checkpoint": next_multiple(ppo.steps_done, req.checkpoint_every),
        "last_steps": ppo.steps_done,
        "last_update": t0,
    }

    def after_update(p: BatchedPPO) -> None:
        now = time.monotonic()
        rate = (p.steps_done - clock["last_steps"]) / max(now - clock["last_update"], 1e-9)
        clock["last_steps"], clock["last_update"] = p.steps_done, now
        for k, stats in enumerate(p.stats):
            row = _scalar_row(p.steps_done, stats, p.updates, rate, now - t0)
            scalars[k].append(row)
            boards[k].write(row)
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
                    "steps_per_second": round(
                        (p.steps_done - (resumed or 0)) / max(now - t0, 1e-9), 1
                    ),
                }
            )
        if planner is not None:
            # Training's own time: evaluations played here are not what the plan measures.
            spent = evals.seconds + (periodic.seconds if periodic is not None else 0.0)
            planner.after_update(now - t0 - spent)
        # The worker's share, less the cores other processes kept busy since the last update.
        share = threads_asked(out) or threads
        if (wanted := free.threads(share)) != p.threads:
            p.set_threads(wanted)
            emit({"event": "threads", "threads": wanted, "timesteps": p.steps_done})
        if (marker := stop_requested(out)) is not None and not p.stopped:
            p.stopped, stopped["pct"] = True, int(marker["pct"])
            emit({"event": "stopped_at_pass", "timesteps": p.steps_done, **marker})
        if p.steps_done < p.timesteps and not p.stopped:  # the end's come after the loop
            if periodic is not None:
                periodic.passed(p.steps_done)
            # Evaluation points first: a retry that resumes from this checkpoint skips them.
            evals.passed(p.steps_done)
        if req.checkpoint_every and clock["next_checkpoint"] <= p.steps_done < p.timesteps:
            folder = f"checkpoint_{p.steps_done}"
            save_state(p, out / folder, {"scalars": scalars, "warm_start": warm})
            emit({"event": "checkpoint", "dir": folder, "timesteps": p.steps_done})
            clock["next_checkpoint"] = next_multiple(p.steps_done, req.checkpoint_every)

    # The starting count first (as the SB3 trainer does): the worker's meter measures speed
    # between progress events.
    emit({"event": "progress", "timesteps": ppo.steps_done, "mean_return": None})
    ppo.learn(after_update)
    for board in boards:
        board.close()
    if periodic is not None:
        periodic.finished()
    evals.finished()
    wall = time.monotonic() - t0
    trained = ppo.steps_done - (resumed or 0)
    members: dict[str, Any] = {}
    for k, (cand, folder) in enumerate(zip(candidates, folders, strict=True)):
        save_candidate(ppo, k, folder)
        # Stopped at pass: the policy the checkpoint judge passed is the run's policy, not
        # the one the updates after it (while it was judged) left, which may have drifted.
        kept_pct = stopped.get("pct")
        kept = kept_pct is not None and keep_checkpoint_policy(folder, kept_pct)
        rows = scalars[k]
        (folder / SCALARS).parent.mkdir(parents=True, exist_ok=True)
        (folder / SCALARS).write_text("".join(json.dumps(r) + "\n" for r in rows))
        summary = _summary(req, ppo, k, wall, trained, resumed, scalars[k])
        summary["eval_checkpoint_seconds"] = round(evals.seconds, 2)
        summary["stopped_at_pct"] = stopped.get("pct")
        summary["policy_from_pct"] = kept_pct if kept else None
        summary["warm_start"] = warm[k]
        if planner is not None:
            summary["time_plan"] = planner.record()
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


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _scalar_row(steps: int, stats: CandidateStats, update: int, rate: float, wall: float) -> dict:
    """One metrics line per update, under the names the SB3 trainer writes (ppo.py)."""
    recent = slice(-WINDOW, None)
    return {
        "update": update,
        "timesteps": steps,
        "ep_return_mean": _mean(stats.returns[recent]),
        "ep_len_mean": _mean([float(n) for n in stats.lengths[recent]]),
        "env_return_mean": _mean(stats.env_returns[recent]),
        "episodes": len(stats.returns),
        **{f"term_{k}": v for k, v in stats.rollout_terms.items()},
        **stats.train,
        "steps_per_second": round(rate, 1),
        "wall_seconds": round(wall, 2),
    }


def _summary(
    req: ChildRequest,
    ppo: BatchedPPO,
    k: int,
    wall: float,
    trained: int,
    resumed: int | None,
    rows: list[dict[str, Any]],
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
    fault = ppo.faults.get(k)
    # A failed reward's sandbox may be gone: its counts are not asked for.
    counts, counts_fault = (
        ({}, None) if fault is not None else reward_counts(ppo.candidates[k].rewards)
    )
    fault = fault or counts_fault
    # Each term's per-step mean over the last quarter of training, as the SB3 trainer reports
    # it (the reviser reads what the policy does now, not the whole run's average).
    rollouts = [
        (int(r["timesteps"]), {n[5:]: v for n, v in r.items() if n.startswith("term_")})
        for r in rows
    ]
    term_means = final_term_means(rollouts, ppo.steps_done) if rollouts else {}
    return {
        "env_id": req.env_id,
        "timesteps": ppo.timesteps,  # the budget (planned from time, with a time budget)
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
        # Steps whose reward was NaN/inf (zeroed) or beyond +-1e6 (clipped) by the sandbox.
        "nonfinite_rewards": counts.get("nonfinite"),
        "clipped_rewards": counts.get("clipped"),
        "episode": _episode_settings(ppo, k),
        # The SHAPING the member trained under (None: the env as the judge sees it).
        "shaping": ppo.shapings[k].model_dump(mode="json", exclude_defaults=True) or None,
        "engine": {
            "threads": ppo.threads,
            "physics_threads": ppo.envs.stepper.chosen,
            "seconds": dict(ppo.seconds),
            # Where the networks and the update ran ("cpu", "cuda:0"); physics is on the cores.
            "device": str(ppo.device),
        },
        "torch_threads": torch.get_num_threads(),
        **({"fault": fault} if fault is not None else {}),
    }


def _episode_settings(ppo: BatchedPPO, k: int) -> dict[str, Any]:
    """The episode rules member k trained under (its shaped limit, if any), as the SB3
    trainer records them."""
    raw = ppo.envs.envs[0]
    return {
        "max_episode_steps": ppo.shapings[k].max_episode_steps or ppo.envs.max_steps or None,
        "frame_skip": int(raw.frame_skip),
        "dt": float(raw.dt),
        "terminates_early": terminates_early(raw),
    }
