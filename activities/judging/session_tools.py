"""Runs the read-only tools agents call (see activities/llm/agents/tool_specs.py).

Everything here reads S3 artifacts this project wrote itself: reward modules as text, JSON
summaries and judgments, trajectories as npz without pickles. A bad argument or a missing
artifact is an answer the model reads ("error: ..."), never a failed activity.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import numpy as np

from activities.artifacts import ArtifactStore
from activities.evidence import evidence_text, judgment_of, metrics_rows
from activities.logs import activity_logger
from workflows.contracts.activities import (
    SESSION_TOOL,
    implements,
)
from workflows.contracts.judging import Judgment
from workflows.contracts.keys import JUDGMENT, SCALARS, SUMMARY
from workflows.contracts.session import IterationRecord
from workflows.contracts.tools import ToolOutcome, ToolRequest


class ToolError(ValueError):
    """What the model did wrong, said so that it can do better in its next call."""


def run_tool(store: ArtifactStore, req: ToolRequest) -> str:
    """The text answer to one tool call; ToolError when the call cannot be answered."""
    name, args = req.call.name, req.call.arguments
    if args.get("_too_long"):
        raise ToolError("the arguments were too long; ask for less")
    if name == "measure_window":
        if not req.trajectory_key:
            raise ToolError("measure_window has no episode to measure here")
        return trajectory_stats(_stored(store, req.trajectory_key, "the episode"), args)
    if name not in HISTORY_TOOLS:
        tools = list(HISTORY_TOOLS) if req.history_key else ["measure_window", "ask_video"]
        raise ToolError(f"no tool named {name!r}; use one of {', '.join(tools)}")
    record = _iteration(store, req.history_key, args.get("iteration"))
    return HISTORY_TOOLS[name](store, record, args)


def _iteration(store: ArtifactStore, history_key: str | None, value: Any) -> IterationRecord:
    if not history_key:
        raise ToolError("there is no session history here")
    stored = _stored(store, history_key, "the session history").decode()
    history = [IterationRecord.model_validate(r) for r in json.loads(stored)]
    known = [r.iteration for r in history]
    if not isinstance(value, int | float) or int(value) not in known:
        raise ToolError(f"iteration must be one of {known} (got {value!r})")
    return next(r for r in history if r.iteration == int(value))


def _stored(store: ArtifactStore, key: str, what: str) -> bytes:
    """An artifact's bytes; one that is not in S3 (any more) is an answer, not a retry loop."""
    if not store.exists(key):
        raise ToolError(f"{what} is not in storage ({key})")
    return store.get_bytes(key)


def read_reward(store: ArtifactStore, record: IterationRecord, args: dict[str, Any]) -> str:
    """An earlier iteration's reward code."""
    code = _stored(store, record.reward_key, f"iteration {record.iteration}'s reward").decode()
    return f"# Iteration {record.iteration}'s reward ({record.reward_key})\n\n{code}"


def read_judgment(store: ArtifactStore, record: IterationRecord, args: dict[str, Any]) -> str:
    """An earlier iteration's judgment as the reviser's opening shows the last one: the verdict
    and criteria as the record keeps them (both judges merged) and the checkpoint table."""
    key = record.best_run.run_prefix + JUDGMENT
    if not store.exists(key):
        raise ToolError(f"iteration {record.iteration} has no judgment.json")
    code = Judgment.model_validate_json(store.get_text(key))  # as judge_rollout wrote it
    prefix = record.best_run.run_prefix
    budget = record.best_run.timesteps_done
    if store.exists(prefix + SUMMARY):
        budget = json.loads(store.get_text(prefix + SUMMARY)).get("timesteps") or budget
    rows = metrics_rows(store, prefix)
    judgment = judgment_of(record, code)
    criteria = [c for c in judgment.criteria if c.metric != "vlm"]
    return evidence_text(f"Iteration {record.iteration}", judgment, rows, criteria, budget)


# scalars.jsonl columns worth showing, in this order (the others are bookkeeping).
_CURVE = (
    "timesteps",
    "ep_return_mean",
    "env_return_mean",
    "ep_len_mean",
    "action_std",
    "approx_kl",
    "value_loss",
    "explained_variance",
)


def read_training(store: ArtifactStore, record: IterationRecord, args: dict[str, Any]) -> str:
    """An earlier iteration's training: its summary and how the metrics went over the run."""
    prefix = record.best_run.run_prefix
    lines = [f"# Iteration {record.iteration}'s training ({record.best_run.run_name})"]
    if store.exists(prefix + SUMMARY):
        s = json.loads(store.get_text(prefix + SUMMARY))
        lines.append(
            f"{s.get('timesteps_done', 0):,} steps; mean episode return "
            f"{s.get('mean_episode_return')} (env's own reward {s.get('mean_env_return')}); "
            f"still improving at the end: {s.get('still_improving')}"
        )
        means = s.get("term_means") or {}
        lines.append("Per-step term means: " + ", ".join(f"{k} {v:+.3g}" for k, v in means.items()))
        lines.append(f"Hyperparameters: {json.dumps(s.get('hyperparameters', {}))}")
    key = prefix + SCALARS
    if store.exists(key):
        rows = [json.loads(line) for line in store.get_text(key).splitlines() if line.strip()]
        if rows:
            picks = sorted({int(i) for i in np.linspace(0, len(rows) - 1, min(10, len(rows)))})
            shown = [c for c in _CURVE if c in rows[-1]]
            terms = sorted(k for k in rows[-1] if k.startswith("term_"))
            cols = shown + terms
            lines.append("\n| " + " | ".join(cols) + " |")
            lines.append("|" + " --- |" * len(cols))
            for i in picks:
                lines.append("| " + " | ".join(_fmt(rows[i].get(c)) for c in cols) + " |")
    return "\n".join(lines)


def trajectory_window(store: ArtifactStore, record: IterationRecord, args: dict[str, Any]) -> str:
    """Statistics over a window of an earlier iteration's evaluation episode."""
    if not record.best_run.trajectory_key:
        raise ToolError(f"iteration {record.iteration} has no evaluation trajectory")
    key = record.best_run.trajectory_key
    return trajectory_stats(_stored(store, key, f"iteration {record.iteration}'s episode"), args)


HISTORY_TOOLS = {
    "read_reward": read_reward,
    "read_judgment": read_judgment,
    "read_training": read_training,
    "trajectory_stats": trajectory_window,
}

_INDEXED = re.compile(r"^(qpos|qvel|action|obs)\[(\d+)\]$")


def trajectory_stats(npz: bytes, args: dict[str, Any]) -> str:
    """A table of mean/min/max/first/last per field over [start_s, end_s] of an episode."""
    with np.load(io.BytesIO(npz), allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    dt = float(arrays.get("meta_dt", np.array(0.05)))
    steps = len(arrays["reward"])
    start = _number(args.get("start_s"), 0.0, "start_s")
    end = _number(args.get("end_s"), steps * dt, "end_s")
    # Steps from the one at start_s to the last before end_s; rounding first, so that 0.3 s at
    # dt 0.05 (5.999... steps in floating point) starts at step 6, not 5.
    lo = max(int(np.floor(round(start / dt, 6))), 0)
    hi = min(int(np.ceil(round(end / dt, 6))), steps)
    if hi <= lo:
        raise ToolError(
            f"the window {start:g}-{end:g} s is empty; the episode lasts {steps * dt:.2f} s"
        )
    fields = args.get("fields") or sorted(k for k in arrays if k.startswith(("info_", "term_")))
    if not isinstance(fields, list):
        raise ToolError("fields must be a list of names")
    lines = [
        f"Episode of {steps} steps ({steps * dt:.2f} s, dt {dt:g} s); window {lo * dt:.2f}-"
        f"{hi * dt:.2f} s (steps {lo}-{hi - 1}).",
        "| field | mean | min | max | first | last |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in fields[:24]:
        series = _series(arrays, str(name))
        part = series[lo:hi].astype(float)
        lines.append(
            f"| {name} | {_fmt(part.mean())} | {_fmt(part.min())} | {_fmt(part.max())} | "
            f"{_fmt(part[0])} | {_fmt(part[-1])} |"
        )
    return "\n".join(lines)


def _series(arrays: dict[str, np.ndarray], name: str) -> np.ndarray:
    m = _INDEXED.match(name)
    if m:
        base, index = m.group(1), int(m.group(2))
        if base in arrays and arrays[base].ndim == 2 and index < arrays[base].shape[1]:
            return arrays[base][:, index]
        width = arrays[base].shape[1] if base in arrays and arrays[base].ndim == 2 else 0
        raise ToolError(f"{name}: {base} has {width} columns")
    if name in arrays and arrays[name].ndim == 1 and not name.startswith("meta_"):
        return arrays[name]
    known = sorted(k for k in arrays if arrays[k].ndim == 1 and not k.startswith("meta_"))
    raise ToolError(f"no field {name!r}; fields: {', '.join(known)}, qpos[i], qvel[i], action[i]")


def _number(value: Any, default: float, name: str) -> float:
    if value is None:
        return default
    if not isinstance(value, int | float) or value < 0:
        raise ToolError(f"{name} must be a number of seconds >= 0 (got {value!r})")
    return float(value)


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int | np.integer):
        return str(value)  # step counts exactly: 20480, not 2.048e+04
    if isinstance(value, float | np.floating):
        return f"{float(value):.4g}"
    return str(value)


@implements(SESSION_TOOL)
def session_tool(req: ToolRequest) -> ToolOutcome:
    """Run one tool call and put its answer in S3; the agent's next call reads it."""
    log = activity_logger(tool=req.call.name)
    store = ArtifactStore()
    try:
        text, is_error = run_tool(store, req), False
    except ToolError as exc:
        text, is_error = f"error: {exc}", True
    store.put_text(req.result_key, text)
    log.info("tool ran", call=req.call.label(), is_error=is_error, chars=len(text))
    first = text.splitlines()[0] if text else ""
    return ToolOutcome(
        call_id=req.call.id,
        name=req.call.name,
        key=req.result_key,
        is_error=is_error,
        summary=first[:200],
    )
