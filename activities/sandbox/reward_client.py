"""The reward's trusted side: `SandboxRewards` runs the session's reward in the sandbox process
(one instance per env, scored in batches) and decodes and checks every answer it sends back
(`_decode_scores`, `_decode_columns` and the small readers below them).

Nothing the sandbox answers is taken for the format: out of format, non-finite, huge, or more
term names than a run may use, it is the reward's fault, a RewardLoadError in one line.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from activities.behaviours.layout import reads_sensors
from activities.sandbox.client import LOAD_TIMEOUT_S, CodeFault, SandboxClient
from activities.sandbox.errors import one_line
from activities.sandbox.reward_code import LARGE, MAX_TERM_NAME, MAX_TERMS, RewardLoadError
from workflows.contracts.shown import shown

# The longest one scoring call may read for, whatever its rows: shorter than the trainer's
# stall limit (activities/training/train_activity.py TRAIN_STALL_S, 300 s), so that a reward slow
# enough to stall training ends here, as the reward's fault with its reason, and goes to the
# fixer; the stall limit then only catches what is not generated code (issue 42).
SCORE_READ_MAX_S = 240.0
# The module body runs once per instance (one per env): all its runs together get this long.
MODULE_BUDGET_S = 60.0

Transition = tuple[int, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]


def _is_number(value: Any) -> bool:
    return isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating)


def _layout(info: dict[str, Any]) -> list[tuple[str, int]]:
    """The info fields a reward sees, as (name, width); 0 means a scalar."""
    out: list[tuple[str, int]] = []
    for key, value in info.items():
        if key.startswith("_") or not isinstance(key, str):
            continue
        if _is_number(value):
            out.append((key, 0))
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.size:
            out.append((key, int(value.size)))
    return out


class SandboxRewards:
    """The session's reward, run in the sandbox: one instance per env, scored in batches.

    The trusted side of `LoadedReward`: latex, terms, per-instance state over there, and the
    counts of repaired (non-finite, clipped) rewards at the end.
    """

    # Its calls wait on the sandbox process: the engine may make them from a scoring thread
    # while its own thread steps the physics (one call at a time, in order).
    scores_beside = True

    def __init__(
        self,
        box: SandboxClient,
        source: str,
        filename: str,
        *,
        strict: bool = True,
        python_layers: bool = True,
    ) -> None:
        self.box = box
        self.filename = filename
        self.reads_sensors = reads_sensors(source)
        header = {
            "op": "load_reward",
            "source": source,
            "filename": filename,
            "strict": strict,
            "python_layers": python_layers,
        }
        started = time.monotonic()
        answer = self._call(header, timeout_s=LOAD_TIMEOUT_S)[0]
        self._module_s = time.monotonic() - started  # the module's runs so far, in seconds
        with self._reading("loading"):
            self.latex = _text(answer.get("latex", ""), "latex", 2000)
            self.terms = _names(answer.get("terms", []))
            # The module's SHAPING as the sandbox returned it: data only, checked by the
            # trainer (activities/training/batched/shaping.py) before anything applies it.
            self.shaping: Any = answer.get("shaping")
            self._spare: int | None = _count(answer, "id")  # the instance the load made
        # Every term name this run was sent: at most MAX_TERMS over the run, not per call.
        self._seen: set[str] = set(self.terms)
        self._layouts: dict[tuple[str, ...], tuple[list[str], list[list[Any]] | None]] = {}
        self._budget_s = _call_budget()

    def _call(
        self, header: dict[str, Any], payload: bytes = b"", timeout_s: float | None = None
    ) -> tuple[dict[str, Any], bytes]:
        try:
            return self.box.call(header, payload, timeout_s=timeout_s)
        except CodeFault as exc:
            raise RewardLoadError(str(exc)) from None

    @contextlib.contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        """Any failure while reading or using an answer is the reward's (its sandbox answered
        it), one line for the fixer; never an error of the trainer's."""
        try:
            yield
        except RewardLoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the answer made fail
            raise RewardLoadError(
                f"{self.filename}: the reward's sandbox answered out of format while {what} "
                f"({type(exc).__name__}: {one_line(str(exc), 120)})"
            ) from None

    def _count_names(self, names: Iterable[str]) -> None:
        """RewardLoadError once the run has been sent more than MAX_TERMS distinct names."""
        new = set(names) - self._seen
        if not new:
            return
        for name in sorted(new):
            _plain(name, self.filename)
        if len(self._seen) + len(new) > MAX_TERMS:
            raise RewardLoadError(
                f"{self.filename}: the reward returned more than {MAX_TERMS} distinct term names "
                f"over the run (a new one: {sorted(new)[0]!r}); return the same named terms on "
                "every call"
            )
        self._seen |= new

    def new_instance(self) -> int:
        """A fresh instance (the module run again): stateful rewards never share state."""
        if self._spare is not None:
            rid, self._spare = self._spare, None
            return rid
        over = RewardLoadError(
            f"{self.filename}: running the module for each env took over "
            f"{MODULE_BUDGET_S:g} s in all; keep its top level to definitions"
        )
        left = MODULE_BUDGET_S - self._module_s
        if left <= 0:
            raise over
        started = time.monotonic()
        try:
            answer = self._call({"op": "instance"}, timeout_s=min(LOAD_TIMEOUT_S, left))[0]
        except RewardLoadError:
            if time.monotonic() - started >= left:
                raise over from None
            raise
        self._module_s += time.monotonic() - started
        with self._reading("making an instance"):
            return _count(answer, "id")

    def drop(self, rid: int) -> None:
        """Forget an instance (its env closed); a dead sandbox is not an error here."""
        with contextlib.suppress(RewardLoadError):
            self._call({"op": "drop", "id": rid})

    def counts(self) -> dict[str, int]:
        """Calls, and non-finite or clipped rewards repaired so far, over every instance."""
        answer = self._call({"op": "counts"})[0]
        with self._reading("counting its calls"):
            return {k: _count(answer, k) for k in ("calls", "nonfinite", "clipped")}

    def _layout_of(self, info: dict[str, Any]) -> tuple[list[str], list[list[Any]] | None]:
        """(field names, wire layout) for this info's keys; cached per key set, and None for
        the layout until the first batch fixes the array widths."""
        key = tuple(info)
        cached = self._layouts.get(key)
        if cached is None:
            cached = ([n for n, _ in _layout(info)], None)
            self._layouts[key] = cached
        return cached

    def score(self, batch: Sequence[Transition]) -> list[tuple[float, dict[str, float]]]:
        """(total, terms) per transition, in order; RewardLoadError blames the reward."""
        info0 = batch[0][4]
        names, wire_layout = self._layout_of(info0)
        if any(tuple(t[4]) != tuple(info0) for t in batch[1:]):
            # Fields differ within the batch (rare): score one at a time.
            return [r for t in batch for r in self.score([t])]
        columns = [
            np.asarray([t[1] for t in batch], dtype=np.float64),
            np.asarray([t[2] for t in batch], dtype=np.float64).reshape(len(batch), -1),
            np.asarray([t[3] for t in batch], dtype=np.float64),
        ]
        columns += [
            np.asarray([t[4][name] for t in batch], dtype=np.float64).reshape(len(batch), -1)
            for name in names
        ]
        if wire_layout is None:
            scalar = {n for n, w in _layout(info0) if w == 0}
            wire_layout = [
                [name, 0 if name in scalar else col.shape[1]]
                for name, col in zip(["obs", "action", "next_obs", *names], columns, strict=True)
            ]
            self._layouts[tuple(info0)] = (names, wire_layout)
        data = np.concatenate(columns, axis=1)
        ids = [t[0] for t in batch]
        starts = [bool(t[4].get("_episode_start", False)) for t in batch]
        answer, body = self._score_packed(ids, starts, wire_layout, data)
        with self._reading("scoring"):
            scored = _decode_scores(answer, body, len(batch), frozenset(self._seen))
            self._count_names(name for _, terms in scored for name in terms)
        return scored

    def score_columns(
        self,
        ids: Sequence[int],
        starts: np.ndarray,
        obs: np.ndarray,
        action: np.ndarray,
        next_obs: np.ndarray,
        info: dict[str, np.ndarray],
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Score n transitions given as columns (row i: instance ids[i]; info fields as (n,)
        for a scalar or (n, w) arrays): the totals and each term, as arrays of n."""
        n = len(ids)
        named = [("obs", obs), ("action", action), ("next_obs", next_obs), *info.items()]
        layout = [
            [
                name,
                0
                if name not in ("obs", "action", "next_obs") and col.ndim == 1
                else int(np.prod(col.shape[1:])),
            ]
            for name, col in named
        ]
        data = np.concatenate(
            [np.asarray(c, dtype=np.float64).reshape(n, -1) for _, c in named], axis=1
        )
        answer, body = self._score_packed(
            list(map(int, ids)), [bool(x) for x in starts], layout, data
        )
        with self._reading("scoring"):
            totals, terms = _decode_columns(answer, body, n, frozenset(self._seen))
            self._count_names(terms)
        return totals, terms

    def _score_packed(
        self, ids: list[int], starts: list[bool], layout: list[list[Any]], data: np.ndarray
    ) -> tuple[dict[str, Any], bytes]:
        header = {"op": "score", "ids": ids, "start": starts, "layout": layout}
        # A whole batch may take the per-call budget for each transition, up to the cap.
        timeout = max(self.box.call_timeout_s, 2.0 + 1.5 * len(ids) * self._budget_s)
        timeout = min(timeout, SCORE_READ_MAX_S)
        started = time.monotonic()
        try:
            return self.box.call(header, data.tobytes(), timeout_s=timeout)
        except CodeFault as exc:
            took = time.monotonic() - started
            if took < timeout:
                raise RewardLoadError(str(exc)) from None
            at = f" (it was at {exc.where})" if exc.where else ""
            raise RewardLoadError(
                f"{self.filename}: scoring {len(ids):,} steps took over {timeout:.0f} s "
                f"({1000 * took / len(ids):.0f} ms a step or more){at}, long enough to stall "
                "training; keep compute() to a few milliseconds a call"
            ) from None


def _call_budget() -> float:
    from activities.sandbox.guards import call_budget_s

    return call_budget_s()


def _names(raw: Any) -> list[str]:
    if not isinstance(raw, list) or len(raw) > MAX_TERMS:
        raise RewardLoadError("the reward's sandbox answered with a malformed list of terms")
    if not all(isinstance(n, str) and len(n) <= MAX_TERM_NAME for n in raw):
        raise RewardLoadError("the reward's sandbox answered with malformed term names")
    for name in raw:
        _plain(name, "the reward")
    return raw


def _plain(name: str, filename: str) -> None:
    """RewardLoadError for a term name that would print as something other than it holds (a
    lone surrogate breaks the files it is written to; an invisible character makes two names
    look alike): names are checked once, where they cross from the sandbox."""
    if not name or shown(name) != name:
        raise RewardLoadError(
            f"{filename}: the term name {shown(name, 60)!r} is empty or holds characters that "
            "print as something else (controls, surrogates, invisible marks); use plain text"
        )


def _count(answer: dict[str, Any], key: str) -> int:
    """A count or id from an answer: a non-negative integer (JSON int, not bool), else a
    ValueError naming the field."""
    if key not in answer:
        raise ValueError(f"{key!r} is missing")
    value = answer[key]
    if type(value) is not int or not 0 <= value < 1 << 53:
        raise ValueError(f"{key!r} must be a non-negative integer, got {type(value).__name__}")
    return value


def _text(value: Any, key: str, limit: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be text, got {type(value).__name__}")
    return value[:limit]


def _decode_scores(
    answer: dict[str, Any], body: bytes, n: int, seen: frozenset[str] = frozenset()
) -> list[tuple[float, dict[str, float]]]:
    """Each row's total and terms; RewardLoadError for anything out of format, and, while the
    rows are read and before anything is built from them, once the names the run has seen and
    these rows name pass MAX_TERMS (one array per distinct name would come next)."""
    if len(body) % 8:
        raise RewardLoadError("the reward's sandbox answered with a malformed payload")
    values = np.frombuffer(body, dtype=np.float64)
    if not np.isfinite(values).all() or (np.abs(values) > LARGE * (1 + 1e-9)).any():
        raise RewardLoadError("the reward's sandbox answered with non-finite or huge numbers")
    if "names" in answer:
        names = _names(answer["names"])
        if values.size != n * (1 + len(names)):
            raise RewardLoadError("the reward's sandbox answered with the wrong number of values")
        rows = values.reshape(n, 1 + len(names)).tolist()
        return [(row[0], dict(zip(names, row[1:], strict=True))) for row in rows]
    per_row = answer.get("rows")
    if not isinstance(per_row, list) or len(per_row) != n:
        raise RewardLoadError("the reward's sandbox answered with the wrong number of rows")
    out: list[tuple[float, dict[str, float]]] = []
    flat = values.tolist()
    pos = 0
    named = set(seen)
    for raw in per_row:
        names = _names(raw)
        named.update(names)
        if len(named) > MAX_TERMS:
            raise RewardLoadError(
                f"the reward returned more than {MAX_TERMS} distinct term names over the run; "
                "return the same named terms on every call"
            )
        if pos + 1 + len(names) > len(flat):
            raise RewardLoadError("the reward's sandbox answered with too few values")
        out.append((flat[pos], dict(zip(names, flat[pos + 1 : pos + 1 + len(names)], strict=True))))
        pos += 1 + len(names)
    if pos != len(flat) or not all(math.isfinite(x) for x in flat):
        raise RewardLoadError("the reward's sandbox answered with too many values")
    return out


def _decode_columns(
    answer: dict[str, Any], body: bytes, n: int, seen: frozenset[str] = frozenset()
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """`_decode_scores` as arrays: totals (n,), and each term (n,), 0 where a row lacks it."""
    if "names" in answer:
        names = _names(answer["names"])
        values = np.frombuffer(body, dtype=np.float64) if len(body) % 8 == 0 else None
        if values is None or values.size != n * (1 + len(names)):
            raise RewardLoadError("the reward's sandbox answered with the wrong number of values")
        if not np.isfinite(values).all() or (np.abs(values) > LARGE * (1 + 1e-9)).any():
            raise RewardLoadError("the reward's sandbox answered with non-finite or huge numbers")
        table = values.reshape(n, 1 + len(names))
        return table[:, 0].copy(), {name: table[:, j + 1].copy() for j, name in enumerate(names)}
    scored = _decode_scores(answer, body, n, seen)
    totals = np.array([t for t, _ in scored], dtype=np.float64)
    terms: dict[str, np.ndarray] = {}
    for i, (_, row) in enumerate(scored):
        for name, value in row.items():
            terms.setdefault(name, np.zeros(n))[i] = value
    return totals, terms
