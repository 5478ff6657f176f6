"""The trusted side's watch over each sandbox process, a thread of the process that started it.

The kernel refuses the thread past RLIMIT_NPROC and the write past a full tmpfs, but hostile
code catches the error and goes on; and no rlimit tells a core burnt by a background thread
from the work of calls that each answer in time. So the watchdog looks at every sandbox five
times a second and ends (SIGKILL through a pidfd: never a recycled pid) one that:

  - holds `MAX_THREADS` tasks (it reached RLIMIT_NPROC; one thread is all it needs),
  - used more CPU time outside its calls than `IDLE_CPU_S` + `IDLE_CPU_SHARE` x their time:
    any thread's but the main one's (which answers calls), and the main thread's beyond the
    time the client waited on its answers (timed by its frame reader, `TimedReader`),
  - filled its scratch: the tmpfs nearly full, or, where scratch is a plain folder, more than
    `SCRATCH_MB` or `SCRATCH_FILES` under it (deleted files it holds open included).

Its client then reports a code fault naming the limit (`Watch.limit_reached`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activities.sandbox import scrub, wire
from activities.sandbox.limits import (
    FILE_MB,
    IDLE_CPU_S,
    IDLE_CPU_SHARE,
    MAX_THREADS,
    SCRATCH_FILES,
    SCRATCH_MB,
)

PERIOD_S = 0.2
_TICK = os.sysconf("SC_CLK_TCK")
_FULL_BYTES = 1 << 20  # a tmpfs with less left than this has refused a write, or will
_FULL_FILES = 8
_SCAN_FAILURES = 3  # scratch that cannot be measured this many times in a row counts as full


@dataclass(frozen=True)
class Sample:
    """What /proc says of a sandbox process."""

    cpu_s: float  # user + system time of all its threads, live and ended
    main_s: float  # of its main thread alone: the one that answers calls
    threads: int
    start: int  # clock ticks after boot: with the pid, names the process


def _fields(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        raw = f.read()
    # The command name may hold spaces and parentheses: the fields start after the last ')'.
    return raw[raw.rindex(b")") + 2 :].split()


def read_stat(pid: int) -> Sample:
    """The process's CPU time (all threads, and its main one), threads and start; OSError when
    it is gone."""
    whole = _fields(f"/proc/{pid}/stat")
    main = _fields(f"/proc/{pid}/task/{pid}/stat")
    return Sample(
        (int(whole[11]) + int(whole[12])) / _TICK,
        (int(main[11]) + int(main[12])) / _TICK,
        int(whole[17]),
        int(whole[19]),
    )


class Watch:
    """One sandbox process: its calls' time (from the client), its samples, and the limit it
    was ended for."""

    def __init__(self, pid: int, scratch: Path, cpu_s: int) -> None:
        self.pid = pid
        self.scratch = Path(os.path.realpath(scratch))
        self.cpu_s = cpu_s  # its RLIMIT_CPU (0: none), to name a death by that limit
        self.verdict: str | None = None
        self.last = read_stat(pid)
        self._pidfd = os.pidfd_open(pid)
        self._calls_s = 0.0
        self._since: float | None = time.monotonic()  # starting counts as a call
        self._tmpfs = False
        self._scan_failures = 0

    def call_started(self) -> None:
        if self._since is None:  # already set while it starts: that counts from its start
            self._since = time.monotonic()

    def call_ended(self) -> None:
        if self._since is not None:
            # Added before clearing: a sample in between counts the call twice, never not at all.
            self._calls_s += time.monotonic() - self._since
            self._since = None

    def busy_s(self) -> float:
        """Seconds the client has waited on this sandbox's answers (the call now included)."""
        since = self._since
        return self._calls_s + (time.monotonic() - since if since is not None else 0.0)

    def start(self, scratch_is_tmpfs: bool) -> None:
        """Watch it from now on (its layers are in place: the next frame runs generated code)."""
        self._tmpfs = scratch_is_tmpfs
        _monitor.add(self)

    def stop(self) -> None:
        _monitor.discard(self)
        with contextlib.suppress(OSError):
            os.close(self._pidfd)
        self._pidfd = -1

    def limit_reached(self, returncode: int | None) -> str | None:
        """The limit the process died of ('its 32-thread limit'), or None."""
        if self.verdict:
            return self.verdict
        if returncode == -signal.SIGXFSZ:
            return f"{FILE_MB} MB file-size limit"
        by_cpu = returncode == -signal.SIGKILL and self.last.cpu_s >= self.cpu_s - 1
        if self.cpu_s and (returncode == -signal.SIGXCPU or by_cpu):
            return f"{self.cpu_s} s CPU-time limit"
        return None

    def check(self) -> str | None:
        """The limit it has reached now, or None; None too once it is gone."""
        try:
            now = read_stat(self.pid)
        except (OSError, ValueError, IndexError):
            return None
        if now.start != self.last.start:
            return None  # the pid is another process's now
        self.last = now
        if now.threads >= MAX_THREADS:
            return f"{MAX_THREADS}-thread limit"
        # Calls are answered on the main thread alone: any other thread's CPU time is outside
        # them, and so is the main thread's beyond the time the client waited on its answers
        # (a burning thread slows every call, so the calls' time alone would hide it).
        busy = self.busy_s()
        outside = now.cpu_s - now.main_s + max(0.0, now.main_s - busy)
        allowed = IDLE_CPU_S + IDLE_CPU_SHARE * busy
        if outside > allowed:
            return (
                f"CPU limit ({outside:.1f} s of CPU time outside its calls, "
                f"{allowed:.1f} s allowed)"
            )
        return self._scratch_full()

    def _scratch_full(self) -> str | None:
        try:
            used, files = self._scratch_use()
        except scrub.TooMany:
            return f"{SCRATCH_FILES}-file scratch limit"
        except OSError as exc:
            self._scan_failures += 1
            if self._scan_failures < _SCAN_FAILURES:
                return None
            return f"{SCRATCH_MB} MB scratch limit (its scratch cannot be measured: {exc})"
        self._scan_failures = 0
        if used >= (SCRATCH_MB << 20) - (_FULL_BYTES if self._tmpfs else 0):
            return f"{SCRATCH_MB} MB scratch limit"
        if files >= SCRATCH_FILES - (_FULL_FILES if self._tmpfs else 0):
            return f"{SCRATCH_FILES}-file scratch limit"
        return None

    def _scratch_use(self) -> tuple[int, int]:
        """(bytes, files) in scratch: the tmpfs as the sandbox's mount namespace sees it, or
        the folder walked, plus the deleted files it holds open."""
        if self._tmpfs:
            fs = os.statvfs(f"/proc/{self.pid}/root{self.scratch}")
            return (fs.f_blocks - fs.f_bfree) * fs.f_frsize, fs.f_files - fs.f_ffree
        used, files = scrub.usage(self.scratch, SCRATCH_FILES)
        for fd in os.listdir(f"/proc/{self.pid}/fd"):
            with contextlib.suppress(OSError):
                st = os.stat(f"/proc/{self.pid}/fd/{fd}")
                if stat.S_ISREG(st.st_mode) and st.st_nlink == 0:
                    used += st.st_blocks * 512
        return used, files

    def end(self, reason: str) -> None:
        """Record the limit and SIGKILL the process (through its pidfd)."""
        self.verdict = reason
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)


class TimedReader(wire.FrameReader):
    """The client's frame reader, timing each wait for an answer as the sandbox's call."""

    def __init__(self, fd: int, watch: Watch) -> None:
        super().__init__(fd)
        self._watch = watch

    def read(self, timeout_s: float) -> tuple[dict[str, Any], bytes]:
        self._watch.call_started()
        try:
            return super().read(timeout_s)
        finally:
            self._watch.call_ended()


class _Monitor:
    """One thread for every watched sandbox of this process; it ends when none is left."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: list[Watch] = []
        self._thread: threading.Thread | None = None

    def add(self, watch: Watch) -> None:
        with self._lock:
            self._watches.append(watch)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="sandbox-watchdog", daemon=True
                )
                self._thread.start()

    def discard(self, watch: Watch) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._watches.remove(watch)

    def _run(self) -> None:
        while True:
            time.sleep(PERIOD_S)
            with self._lock:
                if not self._watches:
                    self._thread = None
                    return
                watches = list(self._watches)
            for watch in watches:
                try:
                    reason = watch.check()
                except Exception:  # noqa: BLE001 - one odd sample never stops the watch
                    continue
                if reason:
                    watch.end(reason)
                    self.discard(watch)


_monitor = _Monitor()
