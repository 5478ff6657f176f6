"""The last layer: every call into generated code has a time budget and gets read-only copies.

A call that overruns its budget cannot be caught by the code itself: the SIGALRM handler does
not raise into it, it reports the overrun through the fatal reporter the child installed (which
writes the result file and ends the process at once).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

import numpy as np

DEFAULT_CALL_BUDGET_S = 1.0
_generated_files: set[str] = set()


def _default_fatal(message: str) -> NoReturn:
    sys.stderr.write(message + "\n")
    os._exit(1)


_fatal: Callable[[str], NoReturn] = _default_fatal


def set_fatal_reporter(report: Callable[[str], NoReturn]) -> None:
    """How an overrun ends the process (the child writes result.json, then exits)."""
    global _fatal
    _fatal = report


def register_generated_file(filename: str) -> None:
    """Frames from this file are blamed in overrun messages."""
    _generated_files.add(filename)


def budget_from_env(var: str, default: float) -> float:
    """Seconds from an environment variable; `default` when unset or not a number."""
    raw = os.environ.get(var, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def call_budget_s() -> float:
    return budget_from_env("POLICYFORGE_SANDBOX_CALL_S", DEFAULT_CALL_BUDGET_S)


def _where(frame: FrameType | None) -> str:
    while frame is not None:
        if frame.f_code.co_filename in _generated_files:
            return f"{frame.f_code.co_filename} line {frame.f_lineno}"
        frame = frame.f_back
    return "generated code"


class Budget:
    """Arm before a call into generated code, disarm after (about a microsecond each)."""

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds = seconds
        self.what = what
        signal.signal(signal.SIGALRM, self._expired)

    def _expired(self, _signum: int, frame: FrameType | None) -> None:
        _fatal(
            f"{_where(frame)}: one call of {self.what} ran longer than its {self.seconds:g} s "
            "budget (an endless loop or far too much work per step)"
        )

    def arm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def disarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)


def readonly(arr: Any) -> Any:
    """A read-only copy of an array (writing to it raises), or the value itself."""
    if type(arr) is np.ndarray:  # exact type: cheaper than isinstance, per step
        out = arr.copy()
        out.flags.writeable = False
        return out
    return arr


def readonly_info(info: dict[str, Any]) -> dict[str, Any]:
    """A copy of the info dict with read-only arrays: changes never reach the trainer."""
    out = dict(info)
    for key, value in info.items():
        if type(value) is np.ndarray:
            out[key] = readonly(value)
    return out
