"""Temporary folders named after the process that owns them, and the clean-up of the ones whose
owner is gone.

    pf-run-<owner pid>-<owner start, clock ticks after boot>-<random>     a run's folder
    pf-worker-<owner pid>-<owner start>-<random>                           a worker's folder

A run's folder holds its sandboxes' scratch; the supervisor removes it when the run ends. A
worker process keeps every temporary folder it makes (pf-train-*, pf-eval-*, pf-judge-*, its
runs', its children's) in a folder of its own (`worker_temp_root`), locked with flock(2) for as
long as it lives and removed when it stops. A worker killed (or a machine that lost power) leaves
them behind, and the next worker to start removes them (`reap_stale`), once /proc shows that no
process with that pid and start time lives and, for a worker's folder, its lock can be taken.
Folders of the layout before worker folders (pf-train-<random> and the like, straight in the
temporary root) name no owner: they are removed only when made before this machine booted. A
folder of another uid, with any other name, or a link, is never touched; nothing is followed.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from activities.sandbox.scrub import remove_tree, walk

log = logging.getLogger(__name__)

PREFIX = "pf-run-"
WORKER_PREFIX = "pf-worker-"
_OWNED = re.compile(r"pf-(run|worker)-(\d+)-(\d+)-[A-Za-z0-9_]+")
# What our activities and the sandbox made straight in the temporary root before worker folders.
_UNOWNED = re.compile(r"pf-(train|eval|validate|judge|batch|sandbox)-[A-Za-z0-9_]+")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks after boot), or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    return int(raw[raw.rindex(b")") + 2 :].split()[19])


def _owned_prefix(prefix: str) -> str:
    me = os.getpid()
    return f"{prefix}{me}-{_start_ticks(me) or 0}-"


def make_run_dir(root: str | None = None) -> str:
    """A fresh run folder owned by this process (under TMPDIR unless `root` is given)."""
    return tempfile.mkdtemp(prefix=_owned_prefix(PREFIX), dir=root)


def owner_alive(name: str) -> bool:
    """Whether the process a run or worker folder is named after still runs; True when unsure."""
    match = _OWNED.fullmatch(name)
    if match is None:
        return True
    pid, start = int(match[2]), int(match[3])
    try:
        now = _start_ticks(pid)
    except (OSError, ValueError, IndexError):
        return True  # there, but unreadable: keep it
    # Gone, or the pid is another process's now (after a restart or a reboot).
    return now is not None and now == start


def _boot_time() -> float | None:
    """When this machine booted (seconds since the epoch), None when unknown."""
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


@dataclass
class Reaped:
    """What a clean-up removed (paths and bytes allocated) and what it could not."""

    removed: list[str] = field(default_factory=list)
    bytes: int = 0
    left: list[str] = field(default_factory=list)


def _allocated(path: str) -> int:
    """Bytes allocated under `path`, links not followed; 0 when it cannot be walked."""
    total = [0]

    def visit(fd: int) -> list[str]:
        subdirs = []
        with os.scandir(fd) as entries:
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):
                    total[0] += entry.stat(follow_symlinks=False).st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.name)
        return subdirs

    head, name = os.path.split(os.path.abspath(path))
    try:
        parent = os.open(head, _DIR & ~os.O_NOFOLLOW)
        try:
            walk(parent, name, visit)
        finally:
            os.close(parent)
    except Exception:  # noqa: BLE001 - a size is only reported
        pass
    return total[0]


def _stale(entry: os.DirEntry[str], booted: float | None) -> bool:
    """Whether `entry` is a folder of ours (this uid, our names) that no live process uses."""
    if not entry.is_dir(follow_symlinks=False):
        return False
    st = entry.stat(follow_symlinks=False)
    if st.st_uid != os.geteuid():
        return False
    if _OWNED.fullmatch(entry.name):
        return not owner_alive(entry.name)
    # No owner in the name: only what was made before this boot (a folder's ctime moves with
    # every entry made or removed in it, and cannot be set back).
    return bool(_UNOWNED.fullmatch(entry.name)) and booted is not None and st.st_ctime < booted


def _remove_unlocked(path: str) -> tuple[int, str | None]:
    """Remove a stale folder unless a live process holds its lock (a worker's folder is locked
    while the worker lives, in whatever pid namespace): the bytes it held, and what stayed (one
    line) or None."""
    try:
        fd = os.open(path, _DIR)
    except FileNotFoundError:
        return 0, None
    except OSError as exc:
        return 0, f"{path} left behind: {type(exc).__name__}: {exc}"
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0, f"{path} left behind: its lock is held by a live process"
        size = _allocated(path)
        return size, remove_tree(path)
    finally:
        os.close(fd)


def reap_stale(root: str | None = None) -> Reaped:
    """Remove the run and worker folders under `root` (TMPDIR by default) whose owner is gone,
    and unowned folders of ours from before this boot. Never raises: what stays is in `left`."""
    base = Path(root or _base_tempdir())
    reaped = Reaped()
    try:
        entries = list(os.scandir(base))
    except OSError as exc:
        reaped.left.append(f"{base} not looked in: {exc}")
        return reaped
    booted = _boot_time()
    for entry in entries:
        try:
            if not _stale(entry, booted):
                continue
        except OSError:
            continue
        size, left = _remove_unlocked(entry.path)
        if left:
            reaped.left.append(left)
        else:
            reaped.removed.append(entry.path)
            reaped.bytes += size
    return reaped


@dataclass
class _Root:
    path: str
    fd: int
    base: str
    saved: tuple[str | None, str | None]  # tempfile.tempdir and TMPDIR before it
    users: int = 1


_root_lock = threading.Lock()
_root: _Root | None = None


def _base_tempdir() -> str:
    """The temporary root this process's worker folder is made in (the usual one without)."""
    with _root_lock:
        return _root.base if _root is not None else tempfile.gettempdir()


@contextlib.contextmanager
def worker_temp_root(base: str | None = None) -> Iterator[str]:
    """This process's temporary folders, for as long as it is a worker: a `pf-worker-` folder
    under `base` (TMPDIR by default), locked while the process lives, made the default of
    `tempfile` and the TMPDIR its children inherit; removed (and the defaults restored) on the
    way out. Entered again while in use (several pools in one process), it is the same folder.
    """
    global _root
    with _root_lock:
        if _root is None:
            home = base or tempfile.gettempdir()
            path = tempfile.mkdtemp(prefix=_owned_prefix(WORKER_PREFIX), dir=home)
            fd = os.open(path, _DIR)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours alone: it was just made
            _root = _Root(path, fd, home, (tempfile.tempdir, os.environ.get("TMPDIR")))
            tempfile.tempdir = os.environ["TMPDIR"] = path
        else:
            _root.users += 1
        current = _root
    try:
        yield current.path
    finally:
        with _root_lock:
            current.users -= 1
            last = current.users == 0
            if last:
                _root = None
                tempdir, env = current.saved
                tempfile.tempdir = tempdir
                if env is None:
                    os.environ.pop("TMPDIR", None)
                else:
                    os.environ["TMPDIR"] = env
        if last:
            left = remove_tree(current.path)
            os.close(current.fd)
            if left:
                log.warning("worker folder not removed (the next worker's start will): %s", left)
