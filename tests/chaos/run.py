"""Running the scenarios in order on one stack, and the drill's command
(`python -m tests.chaos`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.chaos.report import Row, as_json, table
from tests.chaos.scenarios import LONG, SCENARIOS, SHORT, Sizes
from tests.chaos.stack import running_stack


def selected(only: str | None) -> list[str]:
    """The scenario names `--only a,b` picks, in the fixed order; all when not given."""
    if not only:
        return list(SCENARIOS)
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise SystemExit(
            f"error: unknown scenario {', '.join(unknown)}; one of {', '.join(SCENARIOS)}"
        )
    return [n for n in SCENARIOS if n in names]


# Lanes of `run_in_lanes`: the scenarios that kill a process of their stack share one; the
# others share a second. Two stacks, not one per scenario: on 2 cores each stack's servers and
# worker pools cost CPU even while their sessions wait, and the two lanes take about as long.
LANES = (("train_kill", "temporal_restart", "s3_restart"),)


async def run_scenarios(
    names: Sequence[str], sizes: Sizes, root: Path, *, progress: bool = False
) -> list[Row]:
    """Start a stack under `root`, run the named scenarios one after another, stop the stack.

    A scenario that raises gives a row with its error as a problem; the next one still runs.
    """
    rows: list[Row] = []
    async with running_stack(root) as stack:
        for name in names:
            if progress:
                print(f"chaos: {name} ...", file=sys.stderr, flush=True)
            began = time.monotonic()
            try:
                row = await SCENARIOS[name](stack, sizes)
            except Exception as exc:  # noqa: BLE001 - reported in the row, the run goes on
                row = Row(name, trials=1, problems=[f"raised {type(exc).__name__}: {exc}"])
            row.seconds = time.monotonic() - began
            rows.append(row)
            if progress:
                print(table([row]).splitlines()[1], file=sys.stderr, flush=True)
    return rows


async def run_in_lanes(names: Sequence[str], sizes: Sizes, root: Path) -> list[Row]:
    """Lanes at once, each on a stack of its own (`LANES`, then the rest): for CI, since the
    fault scenarios mostly wait, for a heartbeat timeout, a server to come back or a retry. The
    rows come in the usual order; load figures are higher than in a sequential run."""
    lanes = [[n for n in names if n in lane] for lane in LANES]
    lanes.append([n for n in names if not any(n in lane for lane in LANES)])
    results = await asyncio.gather(
        *(run_scenarios(lane, sizes, root / f"lane{i}") for i, lane in enumerate(lanes) if lane)
    )
    rows = {row.scenario: row for lane_rows in results for row in lane_rows}
    return [rows[n] for n in names]


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m tests.chaos [--long] [--only NAME[,NAME]] [--json]`: the table, exit 1 if a row
    is not 100% finished with nothing lost."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.chaos",
        description="fault and load scenarios on a local stack of its own, as a table",
    )
    parser.add_argument("--long", action="store_true", help="the long version (CI runs short)")
    parser.add_argument("--only", default=None, metavar="NAME[,NAME]", help="these scenarios")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    names = selected(args.only)
    sizes = LONG if args.long else SHORT
    with tempfile.TemporaryDirectory(prefix="policyforge-chaos-") as tmp:
        rows = asyncio.run(run_scenarios(names, sizes, Path(tmp), progress=not args.json))
    print(as_json(rows) if args.json else table(rows))
    sys.exit(0 if all(r.ok for r in rows) else 1)
