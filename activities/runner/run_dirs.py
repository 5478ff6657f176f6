"""A run's temporary folder (its sandboxes' scratch lives there), named after the process that
owns it, and the clean-up of the ones whose owner is gone.

    pf-run-<owner pid>-<owner start, clock ticks after boot>-<random>

The supervisor removes its run's folder when the run ends; a worker killed (or a machine that
lost power) leaves it behind, and the next worker to start removes it, once /proc shows that
no process with that pid and start time lives. A folder of a live owner, of another uid, or
with any other name is never touched.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path

from activities.sandbox.scrub import remove_tree

log = logging.getLogger(__name__)

PREFIX = "pf-run-"
_NAME = re.compile(r"pf-run-(\d+)-(\d+)-[A-Za-z0-9_]+")


def _start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks after boot), or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    return int(raw[raw.rindex(b")") + 2 :].split()[19])


def make_run_dir(root: str | None = None) -> str:
    """A fresh run folder owned by this process (under TMPDIR unless `root` is given)."""
    me = os.getpid()
    return tempfile.mkdtemp(prefix=f"{PREFIX}{me}-{_start_ticks(me) or 0}-", dir=root)


def owner_alive(name: str) -> bool:
    """Whether the process a run folder is named after still runs; True when unsure."""
    match = _NAME.fullmatch(name)
    if match is None:
        return True
    pid, start = int(match[1]), int(match[2])
    try:
        now = _start_ticks(pid)
    except (OSError, ValueError, IndexError):
        return True  # there, but unreadable: keep it
    # Gone, or the pid is another process's now (after a restart or a reboot).
    return now is not None and now == start


def reap_stale_runs(root: str | None = None) -> list[str]:
    """Remove the run folders under `root` (TMPDIR by default) whose owner is gone; the paths
    removed. Never raises: a folder that stays is logged in one line."""
    base = Path(root or tempfile.gettempdir())
    removed: list[str] = []
    try:
        entries = list(os.scandir(base))
    except OSError as exc:
        log.warning("stale run folders not looked for in %s: %s", base, exc)
        return removed
    for entry in entries:
        try:
            if not _NAME.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
            if owner_alive(entry.name):
                continue
        except OSError:
            continue
        left = remove_tree(entry.path)
        if left:
            log.warning("stale run folder not removed: %s", left)
        else:
            removed.append(entry.path)
    return removed
