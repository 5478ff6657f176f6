"""One row per scenario, and the table (or JSON) the chaos command prints."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field


@dataclass
class Row:
    """What one scenario measured: sessions run, finished and lost, and its own figures."""

    scenario: str
    trials: int
    finished: int = 0
    lost: int = 0
    figures: dict[str, float | int | str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # what was lost or wrong, one line each
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every trial finished, nothing was lost and nothing went wrong."""
        return self.finished == self.trials and self.lost == 0 and not self.problems


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def _figure(value: float | int | str) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def table(rows: Sequence[Row]) -> str:
    """A plain-text table: scenario, trials, finished, lost, figures, then any problems."""
    head = ("scenario", "trials", "finished", "lost", "ok", "s", "figures")
    body = [
        (
            r.scenario,
            str(r.trials),
            str(r.finished),
            str(r.lost),
            "yes" if r.ok else "NO",
            f"{r.seconds:.0f}",
            "  ".join(f"{k}={_figure(v)}" for k, v in r.figures.items()),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (head, *body)) for i in range(len(head))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in (head, *body)
    ]
    for r in rows:
        lines += [f"  {r.scenario}: {p}" for p in r.problems]
    return "\n".join(lines)


def as_json(rows: Sequence[Row]) -> str:
    """The rows as a JSON list (with `ok`)."""
    return json.dumps([{**asdict(r), "ok": r.ok} for r in rows], indent=2)
