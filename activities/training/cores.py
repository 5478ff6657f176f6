"""How many cores a worker's training may use."""

from __future__ import annotations

import os


def cores() -> int:
    """POLICYFORGE_TRAIN_CORES, else this process's CPU affinity (which a container's cpuset
    sets), else the machine's cores."""
    raw = os.environ.get("POLICYFORGE_TRAIN_CORES", "")
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
