"""What the dashboard reads from S3 for a session page: reward code and how it changed, the
training curves, the judges' verdicts and the videos of each iteration.

Everything here is a plain function over an `ArtifactStore` and the session's records (its
status query), so tests call it without a browser. Missing files are normal (a run still
training has no judgment yet, an offline session has no video judge): they read as None.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from activities.artifacts import ArtifactStore
from workflows.contracts import keys
from workflows.contracts.session import IterationRecord, SessionStatus
from workflows.contracts.shown import shown

# Checkpoint videos: the episodes at these return percentiles of each evaluation checkpoint.
PICKS = ("p10", "median", "p90")
_LABEL_CHARS = 120  # a curve's name in a chart's legend


def _text(store: ArtifactStore, key: str) -> str | None:
    try:
        return store.get_text(key)
    except ClientError:
        return None


def _json(store: ArtifactStore, key: str) -> Any:
    text = _text(store, key)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def read_scalars(store: ArtifactStore, run_prefix: str) -> list[dict[str, Any]]:
    """A run's metrics lines (one per PPO update): the finished run's file, or while it trains
    the copy in its newest checkpoint."""
    text = _text(store, run_prefix + keys.SCALARS)
    if text is None:
        steps = [
            (int(folder.rstrip("/").rsplit("_", 1)[1]), folder)
            for folder in store.list_folders(run_prefix + "checkpoints/")
            if folder.rstrip("/").rsplit("_", 1)[-1].isdigit()
        ]
        if not steps:
            return []
        text = _text(store, max(steps)[1] + "scalars.jsonl") or ""
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a copy mid-write
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _finite(value: Any) -> float | None:
    """A number a chart can draw (JSON has no NaN): None for gaps."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def curves(rows: list[dict[str, Any]]) -> dict[str, dict[str, list[float | None]]]:
    """The charts of a run: returns, per-term reward means and losses, each as named series
    over timesteps ({"x": [...], <name>: [...]}). Names are the reward's term names, which
    generated code chose: their hidden characters are escaped (the page's script escapes
    Plotly's markup)."""
    x = [float(r.get("timesteps", 0)) for r in rows]

    def series(names: Sequence[str]) -> dict[str, list[float | None]]:
        out: dict[str, list[float | None]] = {"x": list(x)}
        for name in names:
            values = [_finite(r.get(name)) for r in rows]
            if any(v is not None for v in values):
                label = shown(name, _LABEL_CHARS)
                out[label if label not in out else f"{label} ({len(out)})"] = values
        return out

    names = sorted({k for r in rows for k in r})
    terms = [n for n in names if n.startswith("term_")]
    losses = [
        n
        for n in ("policy_loss", "value_loss", "entropy_loss", "actor_loss", "critic_loss", "loss")
        if n in names
    ]
    return {
        "returns": series(["ep_return_mean", "env_return_mean"]),
        "terms": series(terms),
        "losses": series(losses),
    }


def reward_diff(before: str | None, after: str | None) -> list[tuple[str, str]]:
    """How a reward's code changed from the iteration before: (kind, line) with kind one of
    "add", "del", "hunk", "same"; empty when there is nothing to compare."""
    if before is None or after is None or before == after:
        return []
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=2
    )
    out = []
    for line in list(lines)[2:]:
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        out.append((kind, line))
    return out


def run_videos(store: ArtifactStore, run_prefix: str) -> dict[str, Any]:
    """A run's eval video and its evaluation checkpoints' percentile videos with their returns:
    {"eval": key | None, "checkpoints": [{"pct", "timesteps", "videos": {pick: {key, return}}}]}."""
    present = set(store.list_keys(run_prefix + "videos/")) | set(
        store.list_keys(keys.eval_checkpoints_prefix(run_prefix))
    )
    eval_key = run_prefix + keys.VIDEO
    checkpoints = []
    pcts = sorted(
        {
            int(k[len(keys.eval_checkpoints_prefix(run_prefix)) :].split("/", 1)[0])
            for k in present
            if k.startswith(keys.eval_checkpoints_prefix(run_prefix))
        }
    )
    for pct in pcts:
        folder = f"{keys.eval_checkpoints_prefix(run_prefix)}{pct}/"
        summary = _json(store, folder + "returns.json") or {}
        picked = summary.get("picked", {})
        videos = {
            pick: {"key": folder + f"{pick}.mp4", "return": picked.get(pick, {}).get("return")}
            for pick in PICKS
            if folder + f"{pick}.mp4" in present
        }
        checkpoints.append({"pct": pct, "timesteps": summary.get("timesteps"), "videos": videos})
    return {"eval": eval_key if eval_key in present else None, "checkpoints": checkpoints}


def run_prefixes(store: ArtifactStore, session_id: str, iteration: int) -> list[str]:
    """Every training run folder of an iteration (c<k>_<config>_seed_<s>/), as S3 prefixes."""
    return [
        folder
        for folder in store.list_folders(keys.iteration_prefix(session_id, iteration))
        if folder.rstrip("/").rsplit("/", 1)[-1].startswith("c")
        and "_seed_" in folder.rstrip("/").rsplit("/", 1)[-1]
    ]


def judgments(store: ArtifactStore, run_prefix: str) -> dict[str, Any]:
    """The code judge's judgment and the video judge's verdicts of a run (None when absent),
    and the synthesizer's closing turn when the judges disagreed."""
    synthesis = sorted(
        (k for k in store.list_keys(keys.synthesis_folder(run_prefix)) if "/turn_" in k),
        key=lambda k: int(k.rsplit("_", 1)[1].split(".")[0]),
    )
    return {
        "code": _json(store, run_prefix + keys.JUDGMENT),
        "visual": _json(store, run_prefix + keys.VISUAL_JUDGMENT),
        "synthesis_turns": len(synthesis),
    }


def iteration_view(
    store: ArtifactStore,
    session_id: str,
    iteration: int,
    record: IterationRecord | None,
    previous_code: str | None,
) -> dict[str, Any]:
    """Everything the session page shows of one iteration: its reward code and diff, its runs'
    curves and videos, the judges' verdicts. `record` is None while the iteration is running."""
    reward_key = record.reward_key if record else keys.reward_key(session_id, iteration)
    code = _text(store, reward_key)
    prefixes = run_prefixes(store, session_id, iteration)
    best = record.best_run.run_prefix if record else (prefixes[0] if prefixes else None)
    runs = []
    for prefix in sorted(prefixes, key=lambda p: (p != best, p)):
        runs.append(
            {
                "prefix": prefix,
                "name": prefix.rstrip("/").rsplit("/", 1)[-1],
                "best": prefix == best,
                "curves": curves(read_scalars(store, prefix)),
                "videos": run_videos(store, prefix),
                "judgments": judgments(store, prefix),
                "summary": _json(store, prefix + keys.SUMMARY),
            }
        )
    return {
        "iteration": iteration,
        "record": record,
        "reward_key": reward_key,
        "code": code,
        "diff": reward_diff(previous_code, code),
        "runs": runs,
    }


def session_iterations(store: ArtifactStore, status: SessionStatus) -> list[dict[str, Any]]:
    """Each iteration's view, the running one included, oldest first."""
    records = {r.iteration: r for r in status.iterations}
    last = max([status.iteration, *records]) if (records or status.iteration) else 0
    views = []
    previous: str | None = None
    for n in range(1, last + 1):
        view = iteration_view(store, status.session_id, n, records.get(n), previous)
        previous = view["code"] if view["code"] is not None else previous
        views.append(view)
    return views
