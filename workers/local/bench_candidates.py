"""`policyforge bench-train --candidates K`: K reward candidates trained three ways, one after
the other in one invocation, on the same machine.

- batched: `workers.local.bench_batched`, one process per core, each training its share of
  the candidates together (`activities.training.batched`), its networks and update on
  `device`; with a GPU, the same again on the CPU (side `batched_cpu`), so that both figures
  come from one invocation;
- per-candidate: today's trainer, the real confined child (`run_child(job.TRAIN)`) once per
  candidate, as many at once as there are processes;
- plain: `workers.local.bench_plain` (PPO with SB3's defaults, no sandbox) once per
  candidate, as many at once.

The candidates are the env's own reward with its terms reweighted (`WEIGHTINGS`), so that every
side can train them and every candidate's final return, measured in the env's own reward, is
comparable across candidates and sides. Each side evaluates each candidate by the same protocol
(one deterministic episode, reset with the same seed, every `eval_every` steps and at the end).

Figures per side: the wall time from the side's start to its last process's end; aggregate
steps/s over that wall; training-only steps/s (each process's steps over its own training clock,
evaluations and process start excluded, summed as if `procs` ran at once); each candidate's
final return; and the wall time until every candidate's return reached the target.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import run_child
from activities.training import job
from workers.local.bench_physics import bare_physics, physics_line, share
from workers.local.bench_train import (
    _CONSTANT,
    _EXTRA_KEYS,
    DEFAULT_TARGETS,
    BenchError,
    bench_device,
    check_reward,
    stream_events,
)
from workers.local.train import _run_sync

SIDES = ("batched", "per_candidate", "plain")
# The batched side again on the CPU, beside a batched side on a GPU (bench_candidates' device).
BATCHED_CPU = "batched_cpu"
KNOWN_SIDES = ("batched", BATCHED_CPU, "per_candidate", "plain")
MAX_CANDIDATES = 256  # a GPU batches hundreds
# Candidate i scales the env's forward and control terms by these factors (cycled): the env's
# own reward first, then cheaper and dearer control, then more and less forward drive.
WEIGHTINGS: tuple[tuple[float, float], ...] = (
    (1.0, 1.0),
    (1.0, 0.5),
    (1.0, 2.0),
    (1.25, 1.0),
    (1.25, 0.5),
    (0.8, 1.0),
    (0.8, 0.5),
    (1.25, 2.0),
)

_SOURCE = '''"""Candidate {name}: the env's reward with its terms reweighted (by bench-train)."""

import numpy as np

WEIGHTS = {weights!r}
EXTRA_KEYS = {extra_keys!r}
CONSTANT = {constant!r}


class Reweighted(RewardFunction):
    # compute() keeps no state and uses array operations: the sandbox may score a whole
    # batch of rows in one call.
    vectorized = True

    def compute(self, obs, action, next_obs, info):
        terms = {{}}
        for key, value in info.items():
            if (key.startswith("reward_") and key != "reward_terms") or key in EXTRA_KEYS:
                terms[key] = WEIGHTS.get(key, 1.0) * np.asarray(value, dtype=float)
        if CONSTANT:
            terms["constant"] = CONSTANT + 0.0 * terms[next(iter(terms))]
        return sum(terms.values()), terms
'''

Line = Callable[[str], None]


def candidates(env_id: str, k: int, ppo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """K candidates: name, weights (factor per info reward term), reward source and the PPO
    settings our two trainers use over the env's preset (`ppo`)."""
    out = []
    for i in range(k):
        forward, ctrl = WEIGHTINGS[i % len(WEIGHTINGS)]
        weights = {"reward_forward": forward, "reward_ctrl": ctrl}
        name = f"c{i}"
        source = _SOURCE.format(
            name=name,
            weights=weights,
            extra_keys=_EXTRA_KEYS.get(env_id, ()),
            constant=_CONSTANT.get(env_id, 0.0),
        )
        out.append(
            {"name": name, "weights": weights, "source": source, "overrides": dict(ppo or {})}
        )
    return out


class _Clock:
    """Arrival times of eval events, per candidate, from the side's start."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.evals: dict[str, list[dict[str, Any]]] = {}
        self.lock = threading.Lock()

    def eval(self, name: str, event: dict[str, Any]) -> None:
        with self.lock:
            row = {**event, "at_s": round(time.monotonic() - self.t0, 2)}
            self.evals.setdefault(name, []).append(row)


def run_batched(
    env_id: str,
    cands: list[dict[str, Any]],
    timesteps: int,
    seed: int,
    every: int,
    procs: int,
    device: str = "cpu",
) -> dict[str, Any]:
    """The batched side: candidates split round-robin over `procs` processes, each one's
    networks and update on `device` (the same split on any device: only the device differs)."""
    clock = _Clock()
    groups = [cands[i::procs] for i in range(procs) if cands[i::procs]]
    # The machine's cores shared by the groups: fewer processes than cores (K=1, a session's
    # shape, or a few large groups around one GPU) step their physics on more threads each.
    threads = max(1, max(procs, os.cpu_count() or 1) // len(groups))
    with tempfile.TemporaryDirectory(prefix="pf-bench-batched-") as tmp:

        def one(i: int, group: list[dict[str, Any]]) -> dict[str, Any]:
            spec = {
                "threads": threads,
                "env_id": env_id,
                "timesteps": timesteps,
                "seed": seed,
                "eval_every": every,
                "device": device,
                "out_dir": str(Path(tmp) / f"p{i}"),
                "candidates": group,
            }
            path = Path(tmp) / f"spec{i}.json"
            path.write_text(json.dumps(spec))
            cmd = [sys.executable, "-m", "workers.local.bench_batched", "--spec", str(path)]
            return stream_events(cmd, lambda e: clock.eval(e["candidate"], e))

        with ThreadPoolExecutor(len(groups)) as pool:
            results = list(pool.map(one, range(len(groups)), groups))
    wall = time.monotonic() - clock.t0
    runs = [(r["timesteps_done"] * len(r["candidates"]), r["train_wall_s"]) for r in results]
    seconds: dict[str, float] = {}
    for r in results:
        for key, value in r["seconds"].items():
            # Milliseconds kept: a tiny run's physics is a few hundredths of a second.
            seconds[key] = round(seconds.get(key, 0.0) + value, 3)
    return {
        "wall_s": wall,
        "runs": runs,
        "evals": clock.evals,
        "seconds": seconds,
        "device": results[0]["device"],
    }


def run_per_candidate(
    env_id: str, cands: list[dict[str, Any]], timesteps: int, seed: int, every: int, procs: int
) -> dict[str, Any]:
    """The reference trainer: one confined child per candidate on Stable-Baselines3's PPO
    (engine "sb3", what every session trained on before the engine), `procs` at a time."""
    clock = _Clock()

    def one(cand: dict[str, Any]) -> tuple[int, float]:
        req = ChildRequest(
            env_id=env_id,
            reward_source=cand["source"],
            reward_filename=f"{cand['name']}.py",
            timesteps=timesteps,
            seed=seed,
            eval_every=every,
            ppo=cand["overrides"],
            engine="sb3",
        )

        def on_event(event: dict[str, Any]) -> None:
            if event.get("event") == "eval":
                clock.eval(cand["name"], event)

        with tempfile.TemporaryDirectory(prefix="pf-bench-one-") as tmp:
            _run_sync(lambda: run_child(job.TRAIN, req, Path(tmp), on_event, stall_s=600))
        last = clock.evals[cand["name"]][-1]
        return int(last["timesteps"]), float(last["train_wall_s"])

    with ThreadPoolExecutor(procs) as pool:
        runs = list(pool.map(one, cands))
    return {"wall_s": time.monotonic() - clock.t0, "runs": runs, "evals": clock.evals}


def run_plain(
    env_id: str, cands: list[dict[str, Any]], timesteps: int, seed: int, every: int, procs: int
) -> dict[str, Any]:
    """Plain SB3 (its defaults, no sandbox) once per candidate, `procs` at a time."""
    clock = _Clock()

    def one(cand: dict[str, Any]) -> tuple[int, float]:
        cmd = [sys.executable, "-m", "workers.local.bench_plain", "--env", env_id]
        cmd += ["--timesteps", str(timesteps), "--eval-every", str(every), "--seed", str(seed)]
        cmd += ["--weights", json.dumps(cand["weights"]), "--threads", "1"]
        result = stream_events(cmd, lambda e: clock.eval(cand["name"], e))
        return int(result["timesteps_done"]), float(result["train_wall_s"])

    with ThreadPoolExecutor(procs) as pool:
        runs = list(pool.map(one, cands))
    return {"wall_s": time.monotonic() - clock.t0, "runs": runs, "evals": clock.evals}


def _figures(side: dict[str, Any], names: list[str], target: float, procs: int) -> dict[str, Any]:
    steps = sum(s for s, _ in side["runs"])
    # Training walls of processes that ran side by side (fewer than procs with few candidates).
    busy = sum(w for _, w in side["runs"]) / min(procs, len(side["runs"]))
    finals, reached = {}, {}
    for name in names:
        evals = side["evals"].get(name) or []
        if not evals:
            raise BenchError(f"candidate {name} finished without an evaluation")
        finals[name] = round(evals[-1]["eval_return"], 1)
        hit = next((e for e in evals if e["eval_return"] >= target), None)
        reached[name] = hit["at_s"] if hit else None
    times = list(reached.values())
    return {
        "wall_s": round(side["wall_s"], 1),
        "steps": steps,
        "steps_per_second": round(steps / max(side["wall_s"], 1e-9), 1),
        "training_steps_per_second": round(steps / max(busy, 1e-9), 1),
        "final_returns": finals,
        "reached_target": sum(t is not None for t in times),
        "time_to_target_all_s": None if None in times else max(t for t in times if t is not None),
        **({"device": side["device"]} if "device" in side else {}),
        **({"seconds": side["seconds"]} if "seconds" in side else {}),
        **({"per_sample_us": per_sample(side["seconds"], steps)} if "seconds" in side else {}),
    }


def per_sample(seconds: dict[str, float], steps: int) -> dict[str, float]:
    """Microseconds per env step in each part of the engine's loop, summed over its processes:
    physics and the policy's forward passes (the rollout's other work, the kernels and the
    normalisation, is what is left of "rollout"), the wait for the rewards (their sandbox calls
    run beside the rollout: "scoring" in `seconds`), the update."""
    us = {k: 1e6 * v / max(steps, 1) for k, v in seconds.items()}
    parts = {name: us.get(name, 0.0) for name in ("physics", "policy", "reward", "update")}
    parts["rollout other"] = max(0.0, us.get("rollout", 0.0) - parts["physics"] - parts["policy"])
    return {k: round(v, 1) for k, v in parts.items()}


def bench_candidates(
    env_id: str,
    timesteps: int,
    k: int,
    *,
    target: float | None = None,
    eval_every: int | None = None,
    seed: int = 0,
    procs: int | None = None,
    sides: tuple[str, ...] = SIDES,
    ppo: dict[str, Any] | None = None,
    say: Line | None = None,
    physics_seconds: float = 3.0,
    device: str = "cpu",
) -> dict[str, Any]:
    """The env's bare physics on `procs` processes, then the sides on K candidates, one after
    the other; their figures side by side, each with its share of that physics. `device`: the
    batched side's ("cpu", "cuda" or "auto"); on a GPU the batched side runs on the CPU too
    (`batched_cpu`), after it."""
    if not 1 <= k <= MAX_CANDIDATES:
        raise BenchError(f"--candidates must be between 1 and {MAX_CANDIDATES} (got {k})")
    if timesteps <= 0:
        raise BenchError(f"--timesteps must be positive (got {timesteps})")
    unknown = [s for s in sides if s not in KNOWN_SIDES]
    if unknown:
        raise BenchError(f"--sides: unknown {unknown}; known: {', '.join(KNOWN_SIDES)}")
    dev = bench_device(device)
    if dev != "cpu" and "batched" in sides and BATCHED_CPU not in sides:
        at = sides.index("batched") + 1
        sides = (*sides[:at], BATCHED_CPU, *sides[at:])
    goal = target if target is not None else DEFAULT_TARGETS.get(env_id)
    if goal is None:
        raise BenchError(f"{env_id}: no default target; give --target")
    procs = procs or os.cpu_count() or 1
    every = eval_every or max(1, timesteps // 4)
    check_reward(env_id, seed=seed)
    if ppo:
        from activities.training.presets import preset_for

        try:
            preset_for(env_id, ppo)
        except (TypeError, ValueError) as exc:
            raise BenchError(f"--ppo: {exc}") from None
    cands = candidates(env_id, k, ppo)
    names = [c["name"] for c in cands]
    runners: dict[str, Callable[..., dict[str, Any]]] = {
        "batched": partial(run_batched, device=dev),
        BATCHED_CPU: partial(run_batched, device="cpu"),
        "per_candidate": run_per_candidate,
        "plain": run_plain,
    }
    out: dict[str, Any] = {
        "env_id": env_id,
        "timesteps_per_candidate": timesteps,
        "candidates": k,
        "procs": procs,
        "eval_every": every,
        "seed": seed,
        "target": goal,
        "device": dev,
        "weights": {c["name"]: c["weights"] for c in cands},
        "ppo_overrides": dict(ppo or {}),
    }
    if say:
        say(f"bare physics: {env_id} with zero actions on {procs} processes ...")
    out["physics"] = bare_physics(env_id, procs, seconds=physics_seconds)
    if say:
        say(physics_line(out["physics"]))
    for side in sides:
        if say:
            where = f", networks on {dev}" if side == "batched" and dev != "cpu" else ""
            say(f"{side}: {k} candidates x {timesteps:,} steps on {procs} processes{where} ...")
        raw = runners[side](env_id, cands, timesteps, seed, every, procs)
        fig = out[side] = _figures(raw, names, goal, procs)
        fig["physics_share"] = share(fig["steps_per_second"], out["physics"])
        fig["training_physics_share"] = share(fig["training_steps_per_second"], out["physics"])
        if say:
            say(
                f"{side}: {fig['wall_s']:.0f} s, {fig['steps_per_second']:,.0f} steps/s "
                f"({fig['training_steps_per_second']:,.0f} training only), "
                f"{fig['physics_share']:.0%} of bare physics"
            )
    return out


def table(out: dict[str, Any]) -> list[str]:
    """The side-by-side tables, as aligned text lines."""
    sides = [s for s in KNOWN_SIDES if s in out]
    device = out.get("device", "cpu")
    label = {
        "batched": "batched" if device == "cpu" else f"batched {device}",
        BATCHED_CPU: "batched cpu",
        "per_candidate": "per-candidate",
        "plain": "plain SB3",
    }

    def cell(v: Any) -> str:
        if v is None:
            return "not reached"
        return f"{v:,.1f}" if isinstance(v, float) else f"{v:,}"

    lines = [f"{'':<34}" + "".join(f"{label[s]:>15}" for s in sides)]
    rows = [
        ("wall (s)", "wall_s"),
        ("aggregate steps/s (wall)", "steps_per_second"),
        ("training-only steps/s", "training_steps_per_second"),
        (f"candidates reaching {out['target']:g}", "reached_target"),
        ("wall until all reached (s)", "time_to_target_all_s"),
    ]
    for name, key in rows:
        lines.append(f"{name:<34}" + "".join(f"{cell(out[s][key]):>15}" for s in sides))
    for name, key in (
        ("share of bare physics (wall)", "physics_share"),
        ("share of bare physics (training)", "training_physics_share"),
    ):
        lines.append(f"{name:<34}" + "".join(f"{out[s][key]:>15.0%}" for s in sides))
    lines.append(physics_line(out["physics"]))
    for s in sides:
        if "per_sample_us" in out[s]:
            parts = ", ".join(f"{k} {v:g}" for k, v in out[s]["per_sample_us"].items())
            lines.append(f"{label[s]}: microseconds per env step (per process): {parts}")
    lines.append("")
    lines.append(f"{'final return (env reward)':<34}" + "".join(f"{label[s]:>15}" for s in sides))
    for name, w in out["weights"].items():
        desc = f"{name} forward x{w['reward_forward']:g} ctrl x{w['reward_ctrl']:g}"
        lines.append(
            f"{desc:<34}" + "".join(f"{out[s]['final_returns'][name]:>15,.1f}" for s in sides)
        )
    return lines
