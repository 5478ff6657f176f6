"""The sandbox process: the only place where generated reward and judge code runs.

    python -m activities.sandbox.host --scratch DIR [--cpu-s N] [--probe]

It imports what generated code may use, confines itself (see `confine.py`), reports which
layers hold in a first frame, and then answers frames from its client on stdin/stdout (see
`client.py`, `reward_client.py` and `judge_client.py` for the operations). It refuses to go on
when a required layer is missing. Its stderr is a pipe that the client drains, keeping the last
few KB for the one-line error it reports when the process dies (no file on the real disk).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NoReturn

import numpy as np

from activities.sandbox import guards, layers, wire
from activities.sandbox.confine import confine_sandbox
from activities.sandbox.errors import code_error, one_line
from activities.sandbox.judge_code import load_judge
from activities.sandbox.loaded_reward import LoadedReward, counts_of, load_reward

_FILES: tuple[str, ...] = ()


class StepFault(Exception):
    """Generated code failed on one step: its blame with that step's inputs, for the fixer."""


def _blame(exc: BaseException) -> str:
    if isinstance(exc, StepFault):
        return one_line(str(exc))
    return code_error(exc, _FILES) or one_line(f"{type(exc).__name__}: {exc}")


def _step_inputs(info: dict[str, Any], action: np.ndarray) -> str:
    """A failing step's inputs in a few numbers: the info scalars the env reported (the first
    six by name) and the largest action, so the fixer sees which state broke the code."""
    scalars = [
        f"{k}={float(v):.3g}" for k, v in sorted(info.items()) if isinstance(v, float | bool)
    ][:6]
    return one_line(
        f"(on a step with {', '.join(scalars) or 'no info scalars'}, "
        f"largest |action| {float(np.max(np.abs(action), initial=0.0)):.2f})",
        200,
    )


class Host:
    """The reward instances (one per env: stateful rewards keep state per episode) and the
    judge of one child run."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.rewards: dict[int, LoadedReward] = {}
        self.template: LoadedReward | None = None
        self.judge: Callable[[dict, list[str]], dict[str, Any]] | None = None
        self._next_id = 0

    def _add(self, reward: LoadedReward) -> int:
        rid = self._next_id
        self._next_id += 1
        self.rewards[rid] = reward
        return rid

    def load_reward(self, h: dict[str, Any], _p: bytes) -> tuple[dict[str, Any], bytes]:
        """Load the reward code; the first instance's id, its latex and its terms."""
        global _FILES
        _FILES = (*_FILES, str(h["filename"]))
        # One budget over the load and, for a vectorized reward, the two fresh instances its
        # first batch is confirmed on: no module body runs later, inside a scoring call.
        with guards.module_budget().holding():
            reward = load_reward(
                str(h["source"]),
                str(h["filename"]),
                strict=bool(h.get("strict", True)),
                copy_inputs=False,
                python_layers=bool(h.get("python_layers", True)),
            )
            reward.make_spares(2)
        self.template = reward
        answer = {"id": self._add(reward), "latex": reward.latex[:2000], "terms": reward.terms}
        if reward.shaping is not None:
            answer["shaping"] = reward.shaping
        return answer, b""

    def instance(self, _h: dict[str, Any], _p: bytes) -> tuple[dict[str, Any], bytes]:
        """A fresh instance of the loaded reward (its module run again)."""
        if self.template is None:
            raise RuntimeError("no reward loaded")
        return {"id": self._add(self.template.clone())}, b""

    def drop(self, h: dict[str, Any], _p: bytes) -> tuple[dict[str, Any], bytes]:
        """Forget an instance."""
        self.rewards.pop(int(h["id"]), None)
        return {}, b""

    def score(self, h: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        """Score a batch of transitions (float64 columns laid out as the header says): each
        total and its terms, names once when every row has the same."""
        ids, starts, layout = h["ids"], h["start"], h["layout"]
        n = len(ids)
        width = sum(max(int(w), 1) for _, w in layout)
        data = np.frombuffer(payload, dtype=np.float64).reshape(n, width)
        # Column views per field once per batch (read-only: the buffer is immutable bytes).
        arrays: dict[str, Any] = {}
        pos = 0
        for name, w in layout:
            w = int(w)
            arrays[name] = data[:, pos] if w == 0 else data[:, pos : pos + max(w, 1)]
            pos += max(w, 1)
        obs_all, act_all = arrays.pop("obs"), arrays.pop("action")
        next_all = arrays.pop("next_obs")
        lead = self.rewards[int(ids[0])] if n else None
        if lead is not None and lead.vectorized:
            # One call for the batch (the code keeps no state: any instance scores any row).
            batch = lead.score_rows(
                obs_all, act_all, next_all, {**arrays, "_episode_start": np.asarray(starts, bool)}
            )
            if batch is not None:
                totals_arr, term_cols = batch
                table = np.column_stack([totals_arr, *term_cols.values()])
                return {"names": list(term_cols)}, table.astype(np.float64).tobytes()
        # Row by row: scalars as Python floats, arrays as row views; each row's info built by
        # zipping the columns (cheaper per row than indexing each one).
        names = [*arrays, "_episode_start"]
        columns = [col.tolist() if col.ndim == 1 else list(col) for col in arrays.values()]
        columns.append([bool(s) for s in starts])
        rewards = [self.rewards[int(i)] for i in ids]
        totals: list[float] = []
        rows: list[list[str]] = []
        values: list[list[float]] = []
        for i, (reward, obs, act, nxt, row) in enumerate(
            zip(rewards, obs_all, act_all, next_all, zip(*columns, strict=True), strict=True)
        ):
            try:
                total, terms = reward(obs, act, nxt, dict(zip(names, row, strict=True)))
            except Exception as exc:  # noqa: BLE001 - blamed on the code, with the step's inputs
                info = {name: float(col[i]) for name, col in arrays.items() if col.ndim == 1}
                info["episode_start"] = bool(starts[i])
                inputs = _step_inputs(info, act_all[i])
                raise StepFault(f"{one_line(_blame(exc), 280)} {inputs}") from None
            totals.append(total)
            rows.append(list(terms))
            values.append(list(terms.values()))
        same = all(r == rows[0] for r in rows)
        flat: list[float] = []
        for total, vals in zip(totals, values, strict=True):
            flat.append(total)
            flat.extend(vals)
        header: dict[str, Any] = {"names": rows[0]} if same else {"rows": rows}
        return header, np.asarray(flat, dtype=np.float64).tobytes()

    def counts(self, _h: dict[str, Any], _p: bytes) -> tuple[dict[str, Any], bytes]:
        """Calls and repaired rewards so far, over every instance."""
        return counts_of(self.rewards.values()), b""

    def load_judge(self, h: dict[str, Any], _p: bytes) -> tuple[dict[str, Any], bytes]:
        """Load the judge code for the `judge` operations that follow."""
        global _FILES
        _FILES = (*_FILES, str(h["filename"]))
        self.judge = load_judge(
            str(h["source"]), str(h["filename"]), python_layers=bool(h.get("python_layers", True))
        )
        return {}, b""

    def run_judge(self, h: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        """Judge one trajectory (read-only arrays as the header lays them out); the checked
        judgment."""
        if self.judge is None:
            raise RuntimeError("no judge loaded")
        trajectory: dict[str, np.ndarray] = {}
        pos = 0
        for name, dtype, shape in h["arrays"]:
            dt = np.dtype(dtype)
            size = int(np.prod(shape)) * dt.itemsize
            trajectory[name] = np.frombuffer(payload[pos : pos + size], dtype=dt).reshape(shape)
            pos += size
        judged = self.judge(trajectory, [str(c) for c in h.get("criteria", [])])
        return {"judgment": judged}, b""

    def serve(self, inp: IO[bytes]) -> None:
        """Answer frames until the client closes the channel; generated code's failures become
        one-line error answers."""
        ops = {
            "load_reward": self.load_reward,
            "instance": self.instance,
            "drop": self.drop,
            "score": self.score,
            "counts": self.counts,
            "load_judge": self.load_judge,
            "judge": self.run_judge,
        }
        while True:
            try:
                header, payload = wire.recv(inp)
            except wire.WireError:
                return  # the client closed the channel: done
            op = ops.get(str(header.get("op")))
            if op is None:
                wire.send(self.out, {"error": f"unknown operation {header.get('op')!r}"})
                continue
            try:
                answer, body = op(header, payload)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - generated code's failures
                wire.send(self.out, {"error": _blame(exc), "fault": True})
                continue
            wire.send(self.out, answer, body)


def _preload() -> None:
    """Import everything generated code and this host may touch before the process confines
    itself: afterwards the project's source is unreadable, and imports that are not already
    done fail."""
    import cmath  # noqa: F401
    import collections  # noqa: F401
    import functools  # noqa: F401
    import itertools  # noqa: F401
    import math  # noqa: F401
    import random  # noqa: F401
    import statistics  # noqa: F401

    import numpy.linalg  # noqa: F401
    import numpy.random  # noqa: F401

    import activities.sandbox.restricted  # noqa: F401

    # pyseccomp loads libseccomp through ctypes.util (which may run ldconfig): before confining.
    # Without it the seccomp layer is reported missing.
    with contextlib.suppress(ImportError):
        import pyseccomp  # noqa: F401

    # numpy imports its printing code lazily from C on the first str() of an array.
    str(np.zeros(3))
    repr(np.zeros((2, 2), dtype=np.float32))
    f"{np.float64(1.5):.2f}"


WHERE_TRIES = 100  # asked again 10 ms apart while the host runs its own loop between calls


def _where_handler(fatal: Callable[[str], NoReturn]) -> Callable[[int, Any], None]:
    """Asked where it is (its client's deadline passed): the line of generated code running
    now, as the last answer, so that the deadline's fault names it. Caught in the host's own
    loop between two calls of the code, it asks itself again a little later."""
    tries = 0

    def handler(_signum: int, frame: Any) -> None:
        nonlocal tries
        tries += 1
        where = guards.where(frame)
        if where == guards.NOT_IN_CODE and tries < WHERE_TRIES:
            main = threading.main_thread().ident
            assert main is not None
            later = threading.Timer(0.01, signal.pthread_kill, (main, wire.WHERE_SIGNAL))
            later.daemon = True
            later.start()
            return
        fatal(where)

    return handler


def _die_with_parent() -> None:
    import ctypes
    import signal

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    parent = os.environ.get("POLICYFORGE_PARENT_PID", "")
    if parent.isdigit() and os.getppid() != int(parent):
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    """Start, confine, report the layers, then serve the client until it closes the channel."""
    parser = argparse.ArgumentParser(prog="python -m activities.sandbox.host")
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--cpu-s", type=int, default=0)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args(argv)
    _die_with_parent()
    # The channel: frames out on a private copy of stdout; fd 1 (and print) go to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = os.fdopen(0, "rb")

    def fatal(message: str) -> NoReturn:
        # A call of generated code overran its budget: say so, then stop at once.
        wire.send(out, {"error": message, "fault": True})
        os._exit(1)

    guards.set_fatal_reporter(fatal)
    signal.signal(wire.WHERE_SIGNAL, _where_handler(fatal))
    _preload()
    applied, missing = confine_sandbox(args.scratch, cpu_s=args.cpu_s, memory_mb=args.memory_mb)
    refused = layers.refusal(missing)
    wire.send(out, {"ready": True, "applied": applied, "missing": missing, "refused": refused})
    if refused or args.probe:
        return 0
    Host(out).serve(inp)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # noqa: BLE001 - the client reads this line from stderr
        sys.stderr.write(json.dumps({"host_error": f"{type(exc).__name__}: {exc}"}) + "\n")
        sys.exit(1)
