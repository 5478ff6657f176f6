"""A train worker's cores, shared by the training children in progress and re-shared as runs
start and end.

A child used to get its threads once, at its start (the cores over the runs then in progress),
and keep them: a run started alone held both cores' worth of physics and torch threads after a
second run joined, and the two then trained at 401 and 2,071 steps/s on a 2-core machine where
two 1-thread runs shared fairly (1,666 and 1,557). Now every change of the runs in progress
writes each child's new share into a marker in its output folder (`MARKER`), and the engine
takes it between updates (physics threads and torch's).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from activities.training.cores import cores
from activities.training.eval_checkpoints import write_marker

MARKER = "cores.json"


@dataclass(eq=False)
class Share:
    """The threads each of `children` children may use now, and the folders told of it."""

    children: int
    threads: int = 1
    folders: list[Path] = field(default_factory=list)

    def follow(self, folder: Path) -> None:
        """Tell the child writing into `folder` its share, now and whenever it changes."""
        self.folders.append(folder)
        write_marker(folder / MARKER, {"threads": self.threads})


_HELD: list[Share] = []  # the shares of this worker's training activities in progress


@contextlib.contextmanager
def sharing_cores(children: int = 1) -> Iterator[Share]:
    """Count `children` training children as running while the block runs; their share of
    this worker's cores (every child in progress gets the same, re-shared as they change)."""
    share = Share(children)
    _HELD.append(share)
    _reshare()
    try:
        yield share
    finally:
        _HELD.remove(share)
        _reshare()


def _reshare() -> None:
    running = sum(s.children for s in _HELD)
    threads = max(1, cores() // max(running, 1))
    for share in _HELD:
        if share.threads == threads:
            continue
        share.threads = threads
        for folder in share.folders:
            with contextlib.suppress(OSError):  # a folder its run removed as it ended
                write_marker(folder / MARKER, {"threads": threads})


def threads_asked(folder: Path) -> int | None:
    """The child's side: the threads its worker gives it now (None: no marker, or unreadable
    while being replaced)."""
    try:
        value = json.loads((folder / MARKER).read_text()).get("threads")
    except (OSError, ValueError, AttributeError):
        return None
    return value if type(value) is int and value > 0 else None
