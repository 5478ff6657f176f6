"""A run's TensorBoard event file, written by both trainers from their metrics lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class Board:
    """Each metrics line (scalars.jsonl's) as policyforge/<key> scalars at its timesteps."""

    def __init__(self, folder: Path) -> None:
        from tensorboardX import SummaryWriter  # only when a run writes one

        self.writer = SummaryWriter(str(folder))

    def write(self, row: dict[str, Any]) -> None:
        for key, value in row.items():
            if key not in ("update", "timesteps") and isinstance(value, int | float):
                self.writer.add_scalar(f"policyforge/{key}", value, row["timesteps"])

    def close(self) -> None:
        self.writer.close()
