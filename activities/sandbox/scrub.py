"""Walking and removing folders that hostile code wrote: a sandbox's scratch, a run's folder.

No recursion (a tree 3,000 levels deep exhausts Python's stack and outgrows PATH_MAX, so
paths are never joined: every step is relative to an open directory, and the walk keeps one
directory open at a time, climbing back through ".." and checking it arrived where it left).
Links are never followed (every open is O_NOFOLLOW; a link is an entry to unlink), the walk
never leaves the filesystem it started on, and a directory its owner made unreadable is given
back to its owner first. `remove_tree` never raises: it says in one line what stayed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Root may read and write any directory; anyone else owns what it removes (a sandbox in a
# user namespace writes files as its worker's uid) and may need to give itself the rights.
_ROOT = os.geteuid() == 0

Visit = Callable[[int], list[str]]  # an open directory -> the subdirectories to enter
Leave = Callable[[int, str], None]  # (the parent, the name of a directory just finished)


def _own_again(parent: int, name: str) -> None:
    """rwx for the owner of a directory it made unreadable, through an O_PATH handle: if
    `name` is a link, nothing is followed and nothing changes."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.chmod(f"/proc/self/fd/{fd}", 0o700)
    finally:
        os.close(fd)


def _open_dir(parent: int, name: str) -> int:
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except PermissionError:
        _own_again(parent, name)
        return os.open(name, _DIR, dir_fd=parent)


@dataclass
class _Level:
    name: str
    ident: tuple[int, int]  # (st_dev, st_ino): where ".." must lead back to
    pending: list[str] = field(default_factory=list)


def walk(parent: int, name: str, visit: Visit, leave: Leave | None = None) -> None:
    """Depth first under `name` (a directory in `parent`): `visit` each directory (it handles
    the files and names the subdirectories to enter), then `leave` it from its parent."""
    cur = _open_dir(parent, name)
    try:
        top = os.fstat(cur)
        stack = [_Level(name, (top.st_dev, top.st_ino), visit(cur))]
        while stack:
            level = stack[-1]
            if level.pending:
                child = level.pending.pop()
                try:
                    fd = _open_dir(cur, child)
                except FileNotFoundError:
                    continue
                st = os.fstat(fd)
                if st.st_dev != top.st_dev:
                    os.close(fd)
                    raise OSError(f"{child!r} is another filesystem mounted inside; left alone")
                os.close(cur)
                cur = fd
                stack.append(_Level(child, (st.st_dev, st.st_ino), visit(cur)))
                continue
            stack.pop()
            if not stack:
                return
            up = os.open("..", _DIR, dir_fd=cur)
            os.close(cur)
            cur = up
            st = os.fstat(cur)
            if (st.st_dev, st.st_ino) != stack[-1].ident:
                raise OSError("the tree was moved while it was walked")
            if leave is not None:
                leave(cur, level.name)
    finally:
        os.close(cur)


def _unlink_all_but_dirs(fd: int) -> list[str]:
    if not _ROOT:
        # Its entries may be removed: write and search for the owner.
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)
    subdirs = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=fd)  # files, links, FIFOs, sockets alike
    return subdirs


def _rmdir(parent: int, name: str) -> None:
    os.rmdir(name, dir_fd=parent)


def remove_tree(path: str | Path) -> str | None:
    """Remove `path` and everything under it; None once it is gone (or never was), else one
    line saying what stayed and why. Never raises."""
    path = os.path.abspath(path)
    head, name = os.path.split(path)
    try:
        parent = os.open(head, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} left behind: {type(exc).__name__}: {exc}"[:300]
    try:
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISDIR(st.st_mode):
            walk(parent, name, _unlink_all_but_dirs, _rmdir)
            os.rmdir(name, dir_fd=parent)
        else:
            os.unlink(name, dir_fd=parent)
        return None
    except Exception as exc:  # noqa: BLE001 - whatever stays is reported, never raised
        return f"{path} left behind: {type(exc).__name__}: {exc}"[:300]
    finally:
        os.close(parent)


class TooMany(Exception):
    """A walk counted more entries than it was allowed to."""


def usage(path: str | Path, max_entries: int) -> tuple[int, int]:
    """(bytes allocated, entries) under the directory `path`, counting up to `max_entries`
    entries (TooMany beyond); OSError when it cannot be walked."""
    path = os.path.abspath(path)
    head, name = os.path.split(path)
    totals = [0, 0]

    def visit(fd: int) -> list[str]:
        subdirs = []
        with os.scandir(fd) as entries:
            for entry in entries:
                totals[1] += 1
                if totals[1] > max_entries:
                    raise TooMany(f"more than {max_entries} entries")
                try:
                    totals[0] += entry.stat(follow_symlinks=False).st_blocks * 512
                except FileNotFoundError:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.name)
        return subdirs

    parent = os.open(head, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        walk(parent, name, visit)
    finally:
        os.close(parent)
    return totals[0], totals[1]
