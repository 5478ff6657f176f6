"""The trusted side's watch over each sandbox process, a thread of the process that started it.

The kernel refuses the thread past RLIMIT_NPROC and the write past a full tmpfs, but hostile
code catches the error and goes on; and no rlimit tells a core burnt by a background thread
from the work of calls that each answer in time. So the watchdog looks at every sandbox five
times a second and ends (SIGKILL through a pidfd: never a recycled pid) one that:

  - holds `MAX_THREADS` tasks (it reached RLIMIT_NPROC; one thread is all it needs),
  - used more CPU time outside its calls than `IDLE_CPU_S` + `IDLE_CPU_SHARE` x the CPU time
    its calls took: all its threads' CPU time but what its main thread (the one that answers)
    used inside calls. The client samples the main thread's CPU time as each call starts and
    ends (its frame reader, `TimedReader`): CPU time, not the calls' wall time, which code
    could bank by sleeping in its calls and spend between them,
  - filled its scratch: the tmpfs nearly full (files it deleted but still maps or holds open
    included), or, where scratch is a plain folder, more than `SCRATCH_MB` or `SCRATCH_FILES`
    under it, plus the deleted files it holds open or maps.

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


class _MainCpu:
    """The main thread's CPU time in clock ticks, sampled at every call's start and end.

    Its stat file stays open and is read again with pread (3 us, where opening it each time
    takes 15). The open file names the thread, not its pid: once the process is reaped it
    reads ESRCH, never a recycled pid's numbers. utime + stime are whole ticks, but their sum
    follows the thread's exact run time, so the rounding averages out over many calls.
    """

    def __init__(self, pid: int) -> None:
        self._fd = os.open(f"/proc/{pid}/task/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)

    def ticks(self) -> int | None:
        """Its CPU time now; None once it is gone (it is counted no more)."""
        if self._fd < 0:
            return None
        try:
            raw = os.pread(self._fd, 512, 0)
            fields = raw[raw.rindex(b")") + 2 :].split(maxsplit=13)
            return int(fields[11]) + int(fields[12])
        except (OSError, ValueError, IndexError):
            self.close()
            return None

    def close(self) -> None:
        fd, self._fd = self._fd, -1  # never read again: its number may be reused
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


class Watch:
    """One sandbox process: its main thread's CPU time inside calls (sampled by the client),
    its samples, and the limit it was ended for."""

    def __init__(self, pid: int, scratch: Path, cpu_s: int) -> None:
        self.pid = pid
        self.scratch = Path(os.path.realpath(scratch))
        self.cpu_s = cpu_s  # its RLIMIT_CPU (0: none), to name a death by that limit
        self.verdict: str | None = None
        self.last = read_stat(pid)
        self._pidfd = os.pidfd_open(pid)
        try:
            self._main = _MainCpu(pid)
        except OSError:
            os.close(self._pidfd)
            raise
        # (main-thread ticks inside ended calls, its ticks when the call in progress started or
        # None): one tuple, replaced whole, so the watchdog's thread reads a consistent pair.
        # Starting counts as a call, from the process's start.
        self._calls: tuple[int, int | None] = (0, 0)
        self._tmpfs = False
        self._scan_failures = 0

    def call_started(self) -> None:
        inside, since = self._calls
        if since is None:  # already set while it starts: that counts from its start
            now = self._main.ticks()
            if now is not None:
                self._calls = (inside, now)

    def call_ended(self) -> None:
        inside, since = self._calls
        if since is not None:
            now = self._main.ticks()
            self._calls = (inside + max(0, now - since) if now is not None else inside, None)

    def _inside_s(self, main_s: float) -> float:
        """The main thread's CPU time inside calls, the call in progress counted up to `main_s`
        (its CPU time in a sample taken before this is read: a call that ends in between counts
        whole, one that starts in between not at all, so what is outside is never overcounted)."""
        inside, since = self._calls
        if since is not None:
            inside += max(0, round(main_s * _TICK) - since)
        return inside / _TICK

    def busy_s(self) -> float:
        """CPU seconds the main thread spent inside calls (the call now in progress included)."""
        now = self._main.ticks()
        return self._inside_s((now if now is not None else 0) / _TICK)

    def start(self, scratch_is_tmpfs: bool) -> None:
        """Watch it from now on (its layers are in place: the next frame runs generated code)."""
        self._tmpfs = scratch_is_tmpfs
        _monitor.add(self)

    def stop(self) -> None:
        _monitor.discard(self)
        self._main.close()
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
        # them, and so is the main thread's between calls (a signal handler runs there while
        # it waits for the next request).
        inside = self._inside_s(now.main_s)
        outside = now.cpu_s - inside
        allowed = IDLE_CPU_S + IDLE_CPU_SHARE * inside
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
        """(bytes, files) in scratch: the tmpfs as the sandbox's mount namespace sees it (files
        deleted but still open or mapped keep their blocks there), or the folder walked, plus
        the deleted files it holds open or maps, each file once."""
        if self._tmpfs:
            fs = os.statvfs(f"/proc/{self.pid}/root{self.scratch}")
            return (fs.f_blocks - fs.f_bfree) * fs.f_frsize, fs.f_files - fs.f_ffree
        used, files = scrub.usage(self.scratch, SCRATCH_FILES)
        hidden = deleted_open(self.pid)
        for key, size in deleted_mapped(self.pid, self.scratch).items():
            hidden[key] = max(size, hidden.get(key, 0))
        return used + sum(hidden.values()), files + len(hidden)

    def end(self, reason: str) -> None:
        """Record the limit and SIGKILL the process (through its pidfd)."""
        self.verdict = reason
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)


# Both read the sandbox's /proc entries, which needs ptrace access to it: root here; a watchdog
# of another uid could not read a non-dumpable sandbox's, and a scan that fails (OSError) counts
# as full once it has failed _SCAN_FAILURES times in a row.
FileKey = tuple[int, int]  # (st_dev, st_ino)


def deleted_open(pid: int) -> dict[FileKey, int]:
    """Deleted regular files the process holds open (no walk finds them): {file: bytes}."""
    held: dict[FileKey, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            st = os.stat(f"/proc/{pid}/fd/{fd}")
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 0:
                held[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return held


def deleted_mapped(pid: int, scratch: Path) -> dict[FileKey, int]:
    """Deleted files from `scratch` that the process still maps (fds closed, names gone: they
    hold their disk until unmapped): {file: bytes}, each file once, at the larger of its blocks
    and the furthest byte any of its mappings reaches.

    Only files named under scratch: the sandbox can write nowhere else, and a library replaced
    on disk while it runs is mapped as deleted too. Its blocks, not its mapped extent, are what
    it holds: one page of a 64 MB file may be all that is mapped.
    """
    prefix = os.fsencode(scratch) + b"/"
    extents: dict[str, int] = {}  # one mapping of each file ('start-end') -> its furthest byte
    first: dict[bytes, str] = {}  # the file, as maps names it ('major:minor inode') -> that one
    with open(f"/proc/{pid}/maps", "rb") as f:
        for line in f:
            # start-end perms offset major:minor inode path (a newline in a name shows as \012)
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or not parts[5].startswith(prefix):
                continue
            start, end = (int(x, 16) for x in parts[0].split(b"-"))
            # map_files names are unpadded hex, where maps pads to 8 digits
            where = first.setdefault(parts[3] + b" " + parts[4], f"{start:x}-{end:x}")
            extents[where] = max(extents.get(where, 0), int(parts[2], 16) + end - start)
    files: dict[FileKey, int] = {}
    for where, extent in extents.items():
        try:  # the file itself, through the mapping (root, or CAP_CHECKPOINT_RESTORE)
            st = os.stat(f"/proc/{pid}/map_files/{where}")
        except FileNotFoundError:
            continue  # unmapped meanwhile
        if st.st_nlink == 0:  # still named, the walk counts it
            key = (st.st_dev, st.st_ino)
            files[key] = max(st.st_blocks * 512, extent, files.get(key, 0))
    return files


class TimedReader(wire.FrameReader):
    """The client's frame reader: each wait for an answer is (part of) the sandbox's call, its
    main thread's CPU time sampled as it starts and ends (some 5 us a call)."""

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
