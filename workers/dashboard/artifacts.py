"""What the dashboard reads from S3 for a session page: reward code and how it changed, the
training curves, the judges' verdicts and the videos of each iteration.

Everything here is a plain function over an `ArtifactStore` and the session's records (its
status query), so tests call it without a browser. Missing files are normal (a run still
training has no judgment yet, an offline session has no video judge): they read as None.
Every object is read with a size limit: anyone who can write the bucket could plant a huge
one, and one over its limit is named as unreadable without being read.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Sequence
from typing import Any, TypeVar

import structlog
from botocore.exceptions import ClientError
from pydantic import BaseModel, ValidationError

from activities.artifacts import ArtifactStore, ObjectTooLarge
from workflows.contracts import keys
from workflows.contracts.judging import Judgment, VisualJudgment
from workflows.contracts.session import IterationRecord, SessionStatus
from workflows.contracts.shown import shown

# Checkpoint videos: the episodes at these return percentiles of each evaluation checkpoint.
PICKS = ("p10", "median", "p90")
_LABEL_CHARS = 120  # a curve's name in a chart's legend
_MAX_TERMS = 64  # term curves on a chart: a planted metrics file could name thousands
# Names policyforge writes: anything else in a session's folder (anyone who can write the
# bucket can plant it) is skipped, never parsed. ASCII digits only: "²".isdigit() is True and
# int("²") fails.
_NUMBER = re.compile(r"[0-9]{1,12}")
_RUN = re.compile(r"c[0-9]{1,6}_[^/]*_seed_[0-9]{1,12}")
_TURN = re.compile(r"turn_([0-9]{1,12})\.json")
# The most the page reads of one object, far above what policyforge writes; one larger is
# named as unreadable and never read.
# summary.json, returns.json and the judges' records measure 0.5-2 KB (judgments a few KB).
RECORD_LIMIT = 4 << 20
# metrics/scalars.jsonl grows with training: about 350 KB for a 1M-step run (one 700-byte
# line per 2,048 steps), so 32 MiB holds runs of 50M steps and more.
SCALARS_LIMIT = 32 << 20
# Reward code measures about 2 KB; 256 KiB is more than a model's whole answer holds.
CODE_LIMIT = 256 << 10


def _number(text: str) -> int | None:
    """A step, percentile or turn in a key's name; None for a name policyforge never writes."""
    return int(text) if _NUMBER.fullmatch(text) else None


def _name(key: str) -> str:
    return key.rstrip("/").rsplit("/", 1)[-1]


def size_text(size: int) -> str:
    """A size as people read it: 4 MiB for a round one (the limits), else exact bytes, so an
    object one byte over its limit never reads as the limit itself."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} bytes"


def too_large(exc: ObjectTooLarge) -> str:
    """An object over its limit in a few words, for a page: logged with its key."""
    structlog.get_logger().warning(
        "dashboard: an object is too large to read", key=exc.key, size=exc.size, limit=exc.limit
    )
    return f"{exc.size:,} bytes, over the {size_text(exc.limit)} limit"


def _bytes(store: ArtifactStore, key: str, limit: int, unreadable: list[str]) -> bytes | None:
    """An object's bytes; None when absent, or when over `limit` (then named in `unreadable`,
    and not read)."""
    try:
        return store.get_bytes_at_most(key, limit)
    except ClientError:
        return None
    except ObjectTooLarge as exc:
        unreadable.append(f"{_name(key)} ({too_large(exc)})")
        return None


def _text(store: ArtifactStore, key: str, limit: int, unreadable: list[str]) -> str | None:
    """An object as text; bytes that are not UTF-8 show as \ufffd rather than failing."""
    data = _bytes(store, key, limit, unreadable)
    return None if data is None else data.decode(errors="replace")


def _json(store: ArtifactStore, key: str, unreadable: list[str]) -> Any:
    """A JSON object's value (None when absent); one that does not parse is named in
    `unreadable` and reads as None."""
    data = _bytes(store, key, RECORD_LIMIT, unreadable)
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested too deep
        unreadable.append(_name(key))
        return None


M = TypeVar("M", bound=BaseModel)


def _model(store: ArtifactStore, key: str, model: type[M], unreadable: list[str]) -> M | None:
    """A record the templates read field by field: checked against its contract, so that a
    planted one of the wrong shape is named in `unreadable` instead of failing the page."""
    data = _bytes(store, key, RECORD_LIMIT, unreadable)
    if data is None:
        return None
    try:
        return model.model_validate_json(data)
    except ValidationError:  # not UTF-8, not JSON, too deep, or not the contract's shape
        unreadable.append(_name(key))
        return None


def read_scalars(
    store: ArtifactStore, run_prefix: str, unreadable: list[str] | None = None
) -> list[dict[str, Any]]:
    """A run's metrics lines (one per PPO update): the finished run's file, or while it trains
    the copy in its newest checkpoint. One over SCALARS_LIMIT is named in `unreadable`."""
    unreadable = [] if unreadable is None else unreadable
    text = _text(store, run_prefix + keys.SCALARS, SCALARS_LIMIT, unreadable)
    if text is None:
        steps = [
            (step, folder)
            for folder in store.list_folders(run_prefix + "checkpoints/")
            if (step := _number(_name(folder).rsplit("_", 1)[-1])) is not None
        ]
        if not steps:
            return []
        text = _text(store, max(steps)[1] + "scalars.jsonl", SCALARS_LIMIT, unreadable) or ""
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a line cut short by a copy mid-write, or not JSON at all
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
    # Rows whose step count is no number (a planted line) have no place on the x axis.
    rows = [r for r in rows if _finite(r.get("timesteps", 0)) is not None]
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
    terms = [n for n in names if n.startswith("term_")][:_MAX_TERMS]
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


def _pick_return(picked: Any, pick: str) -> float | None:
    entry = picked.get(pick) if isinstance(picked, dict) else None
    return _finite(entry.get("return")) if isinstance(entry, dict) else None


def _checkpoint(
    store: ArtifactStore, folder: str, pct: int, present: set[str], unreadable: list[str]
) -> dict[str, Any]:
    """One evaluation checkpoint: its videos, with each pick's return when returns.json says."""
    summary = _json(store, folder + "returns.json", unreadable)
    if summary is not None and not isinstance(summary, dict):
        unreadable.append(_name(folder) + "/returns.json")
        summary = None
    summary = summary or {}
    timesteps = summary.get("timesteps")
    videos = {
        pick: {"key": folder + f"{pick}.mp4", "return": _pick_return(summary.get("picked"), pick)}
        for pick in PICKS
        if folder + f"{pick}.mp4" in present
    }
    return {
        "pct": pct,
        "timesteps": timesteps if isinstance(timesteps, int) else None,
        "videos": videos,
    }


def run_videos(
    store: ArtifactStore, run_prefix: str, unreadable: list[str] | None = None
) -> dict[str, Any]:
    """A run's eval video and its evaluation checkpoints' percentile videos with their returns:
    {"eval": key | None, "checkpoints": [{"pct", "timesteps", "videos": {pick: {key, return}}}]}.
    Only the names policyforge writes are looked at; a returns.json that does not parse is
    named in `unreadable`."""
    unreadable = [] if unreadable is None else unreadable
    evals = keys.eval_checkpoints_prefix(run_prefix)
    present = set(store.list_keys(run_prefix + "videos/")) | set(store.list_keys(evals))
    pcts = {_number(k[len(evals) :].split("/", 1)[0]) for k in present if k.startswith(evals)}
    checkpoints = [
        _checkpoint(store, f"{evals}{pct}/", pct, present, unreadable)
        for pct in sorted(p for p in pcts if p is not None)
    ]
    eval_key = run_prefix + keys.VIDEO
    return {"eval": eval_key if eval_key in present else None, "checkpoints": checkpoints}


def run_prefixes(store: ArtifactStore, session_id: str, iteration: int) -> list[str]:
    """Every training run folder of an iteration (c<k>_<config>_seed_<s>/), as S3 prefixes."""
    return [
        folder
        for folder in store.list_folders(keys.iteration_prefix(session_id, iteration))
        if _RUN.fullmatch(_name(folder))
    ]


def judgments(
    store: ArtifactStore, run_prefix: str, unreadable: list[str] | None = None
) -> dict[str, Any]:
    """The code judge's judgment and the video judge's verdicts of a run (None when absent or
    unreadable, which `unreadable` then names), and how many turns the synthesizer took when
    the judges disagreed."""
    unreadable = [] if unreadable is None else unreadable
    turns = [
        k for k in store.list_keys(keys.synthesis_folder(run_prefix)) if _TURN.fullmatch(_name(k))
    ]
    return {
        "code": _model(store, run_prefix + keys.JUDGMENT, Judgment, unreadable),
        "visual": _model(store, run_prefix + keys.VISUAL_JUDGMENT, VisualJudgment, unreadable),
        "synthesis_turns": len(turns),
    }


def run_view(store: ArtifactStore, prefix: str, best: bool) -> dict[str, Any]:
    """One training run as its part of the page shows it; `unreadable` names the files that
    are there but could not be read."""
    unreadable: list[str] = []
    summary = _json(store, prefix + keys.SUMMARY, unreadable)
    return {
        "prefix": prefix,
        "name": _name(prefix),
        "best": best,
        "curves": curves(read_scalars(store, prefix, unreadable)),
        "videos": run_videos(store, prefix, unreadable),
        "judgments": judgments(store, prefix, unreadable),
        "summary": summary if isinstance(summary, dict) else None,
        "unreadable": unreadable,
    }


def iteration_view(
    store: ArtifactStore,
    session_id: str,
    iteration: int,
    record: IterationRecord | None,
    previous_code: str | None,
) -> dict[str, Any]:
    """Everything the session page shows of one iteration: its reward code and diff, its runs'
    curves and videos, the judges' verdicts. `record` is None while the iteration is running;
    `unreadable` names its reward code when that is too large to show."""
    reward_key = record.reward_key if record else keys.reward_key(session_id, iteration)
    unreadable: list[str] = []
    code = _text(store, reward_key, CODE_LIMIT, unreadable)
    prefixes = run_prefixes(store, session_id, iteration)
    best = record.best_run.run_prefix if record else (prefixes[0] if prefixes else None)
    runs = [
        run_view(store, prefix, prefix == best)
        for prefix in sorted(prefixes, key=lambda p: (p != best, p))
    ]
    return {
        "iteration": iteration,
        "record": record,
        "reward_key": reward_key,
        "code": code,
        "diff": reward_diff(previous_code, code),
        "runs": runs,
        "unreadable": unreadable,
        "error": None,
    }


def _failed_view(
    iteration: int, record: IterationRecord | None, reward_key: str, exc: Exception
) -> dict[str, Any]:
    """An iteration whose files could not be read at all (S3 failing, something unforeseen):
    one line on the page instead of a failed page."""
    structlog.get_logger().exception("dashboard: an iteration could not be read", error=str(exc))
    return {
        "iteration": iteration,
        "record": record,
        "reward_key": reward_key,
        "code": None,
        "diff": [],
        "runs": [],
        "unreadable": [],
        "error": f"{type(exc).__name__}: {exc}",
    }


def session_iterations(store: ArtifactStore, status: SessionStatus) -> list[dict[str, Any]]:
    """Each iteration's view, the running one included, oldest first."""
    records = {r.iteration: r for r in status.iterations}
    last = max([status.iteration, *records]) if (records or status.iteration) else 0
    views = []
    previous: str | None = None
    for n in range(1, last + 1):
        record = records.get(n)
        try:
            view = iteration_view(store, status.session_id, n, record, previous)
        except Exception as exc:  # noqa: BLE001 - the other iterations still show
            key = record.reward_key if record else keys.reward_key(status.session_id, n)
            view = _failed_view(n, record, key, exc)
        previous = view["code"] if view["code"] is not None else previous
        views.append(view)
    return views
