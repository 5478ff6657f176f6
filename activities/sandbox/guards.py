"""The last layer: every call into generated code has a time budget and gets read-only copies.

A call that overruns its budget cannot be caught by the code itself: the SIGALRM handler does
not raise into it, it reports the overrun through the fatal reporter the child installed (which
writes the result file and ends the process at once).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, NoReturn

import numpy as np

DEFAULT_CALL_BUDGET_S = 1.0
# One run of a module body (its definitions, SHAPING, the class's constructor and properties),
# everything a load or an instance runs together: under the client's 30 s read of the answer
# (client.LOAD_TIMEOUT_S), so that the overrun is named here, with the code's line.
DEFAULT_MODULE_BUDGET_S = 20.0
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
    """Seconds one reward call may take (POLICYFORGE_SANDBOX_CALL_S overrides it)."""
    return budget_from_env("POLICYFORGE_SANDBOX_CALL_S", DEFAULT_CALL_BUDGET_S)


def module_budget_s() -> float:
    """Seconds one load of generated code may take (POLICYFORGE_SANDBOX_MODULE_S overrides)."""
    return budget_from_env("POLICYFORGE_SANDBOX_MODULE_S", DEFAULT_MODULE_BUDGET_S)


def module_budget() -> Budget:
    """The budget of one load of generated code: its module body and what the load calls."""
    return Budget(module_budget_s(), "the module body", "keep its top level to definitions")


NOT_IN_CODE = "generated code"  # what `where` says of a frame outside the generated files


def where(frame: FrameType | None) -> str:
    """The generated code's file and line a frame is in, or NOT_IN_CODE."""
    return _where(frame)


def _where(frame: FrameType | None) -> str:
    while frame is not None:
        if frame.f_code.co_filename in _generated_files:
            return f"{frame.f_code.co_filename} line {frame.f_lineno}"
        frame = frame.f_back
    return NOT_IN_CODE


class Budget:
    """Arm before a call into generated code, disarm after: a clock read, no system call.

    A periodic timer (a quarter of the shortest budget, at most 0.25 s) looks at the call in
    progress and ends the process once it has run past its budget, so a call is stopped within
    1.25 x its budget; an interval timer set per call would cost two system calls per reward
    call. The timer stops itself after two idle ticks and `arm` starts it again, so a process
    that is not calling generated code gets no signals. Calls never nest (one thread).
    """

    _period = 0.25
    _running = False
    _idle_ticks = 0
    _current: tuple[float, Budget] | None = None

    def __init__(
        self,
        seconds: float,
        what: str,
        hint: str = "an endless loop or far too much work per step",
    ) -> None:
        self.seconds = seconds
        self.what = what
        self.hint = hint
        Budget._period = min(Budget._period, seconds / 4)

    @staticmethod
    def _start() -> None:
        signal.signal(signal.SIGALRM, Budget._tick)
        signal.setitimer(signal.ITIMER_REAL, Budget._period, Budget._period)
        Budget._running = True
        Budget._idle_ticks = 0

    @staticmethod
    def stop() -> None:
        """Stop the interval timer that watches armed budgets."""
        signal.setitimer(signal.ITIMER_REAL, 0)
        Budget._running = False

    @staticmethod
    def _tick(_signum: int, frame: FrameType | None) -> None:
        current = Budget._current
        if current is None:
            Budget._idle_ticks += 1
            if Budget._idle_ticks >= 2:
                Budget.stop()
            return
        Budget._idle_ticks = 0
        started, budget = current
        if time.monotonic() - started > budget.seconds:
            _fatal(
                f"{_where(frame)}: one call of {budget.what} ran longer than its "
                f"{budget.seconds:g} s budget ({budget.hint})"
            )

    def arm(self) -> None:
        """Start this budget's clock for one call (the timer starts on first use)."""
        Budget._current = (time.monotonic(), self)
        if not Budget._running:
            Budget._start()

    def disarm(self) -> None:
        """The call returned: nothing is timed until the next arm."""
        Budget._current = None

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """This budget over a block that may run generated code in several calls (a module
        body, then its class's constructor and properties); inside a block that is already
        timed, that block's clock goes on."""
        if Budget._current is not None:
            yield
            return
        self.arm()
        try:
            yield
        finally:
            self.disarm()


atexit.register(lambda: Budget.stop() if Budget._running else None)


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
