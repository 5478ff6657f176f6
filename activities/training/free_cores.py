"""How many of its cores a training child may keep busy now: its worker's share, less what
other processes took of the cores lately.

The worker re-shares its cores as its own runs start and end (`core_share.py`), but it cannot
see another worker's runs, the evaluator beside training or anything else on the machine. The
run's own processes (the child and the reward sandbox it started) are never "other". A run
on more compute threads than there are free cores collapses (threads that wait on each other
spin): a 2-thread run alone on 2 cores where another process used half a core trained at 264
steps/s (issue 43). So between updates the child measures, over the last interval, the CPU
time the cores it may run on spent on other processes, and takes the free cores rounded down
(with a little slack), never more than its share and never fewer than one.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

_TICK = os.sysconf("SC_CLK_TCK")
# A core is counted free when at most this much of it was busy with other processes: the
# noise of a machine's own daemons must not halve a run's threads.
SLACK = 0.3
INTERVAL_S = 2.0  # measured over at least this long: one tick is 10 ms of a core


@dataclass(frozen=True)
class _Sample:
    at: float  # monotonic seconds
    busy_s: float  # CPU seconds the allowed cores spent on anything but idle
    own_s: float  # CPU seconds of this process (every thread)


def _allowed() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity here: every core
        return set(range(os.cpu_count() or 1))


def _busy_s(cpus: set[int]) -> float:
    """Non-idle CPU seconds of `cpus` since boot (idle and iowait left out)."""
    busy = 0
    with open("/proc/stat", "rb") as f:
        for line in f:
            if not line.startswith(b"cpu") or line.startswith(b"cpu "):
                continue
            name, *fields = line.split()
            if int(name[3:]) not in cpus:
                continue
            values = [int(v) for v in fields[:8]]
            busy += sum(values) - values[3] - values[4]
    return busy / _TICK


def _descendants(pid: int) -> list[int]:
    """The processes `pid` started, and theirs, that still run (its reward sandbox)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children", "rb") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _cpu_s(pid: int) -> float:
    """CPU seconds (user and system) of process `pid`, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def _own_s() -> float:
    """CPU seconds of this run: this process (every thread), the processes it started that
    still run (its reward sandbox scores beside the physics) and those it has reaped."""
    times = os.times()
    own = times.user + times.system + times.children_user + times.children_system
    return own + sum(_cpu_s(pid) for pid in _descendants(os.getpid()))


class FreeCores:
    """Measures, between calls of `threads`, how busy other processes kept this child's cores."""

    def __init__(self) -> None:
        self._cpus = _allowed()
        self._last = self._sample()
        self._free: int | None = None  # the last measurement's free cores (None: none yet)

    def _sample(self) -> _Sample | None:
        try:
            return _Sample(time.monotonic(), _busy_s(self._cpus), _own_s())
        except (OSError, ValueError, IndexError):
            return None  # no /proc/stat here: the share alone decides

    def threads(self, share: int) -> int:
        """The compute threads to run on until the next call: the free cores, at most `share`.
        Measured over at least INTERVAL_S (updates may come faster: the last measure holds)."""
        last = self._last
        if last is not None and time.monotonic() - last.at < INTERVAL_S:
            return self._share_of(share)
        now = self._sample()
        if now is not None and last is not None:
            others = max(0.0, (now.busy_s - last.busy_s) - (now.own_s - last.own_s))
            self._free = int(len(self._cpus) - others / (now.at - last.at) + SLACK)
            self._last = now
        elif last is None:
            self._last = now
        return self._share_of(share)

    def _share_of(self, share: int) -> int:
        return max(1, min(share, self._free if self._free is not None else share))
