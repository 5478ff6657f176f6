"""Branch coverage per package, from the JSON report pytest-cov wrote (`make check`).

    python scripts/coverage_by_package.py [test-output/coverage.json]

A package is a folder of `workflows/`, `activities/` or `workers/` holding modules
(`activities/training`, `workers/dashboard`, ...); the top-level modules of each count under
their top folder. Covered is coverage.py's own figure: covered statements and branches over all
statements and branches. Only code that ran in the test processes counts: the worker processes
some tests start and the sandboxed children are not measured.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

DEFAULT_REPORT = Path("test-output/coverage.json")
FIELDS = ("num_statements", "covered_lines", "num_branches", "covered_branches")


def package_of(path: str) -> str:
    """The package a measured file belongs to: its folder, as a dotted name."""
    parts = Path(path).parts
    return ".".join(parts[:-1]) if len(parts) > 1 else parts[0]


def by_package(report: dict) -> dict[str, dict[str, int]]:
    """Statement and branch counts summed per package."""
    totals: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))
    for path, data in report["files"].items():
        summary = data["summary"]
        for name in FIELDS:
            totals[package_of(path)][name] += summary.get(name, 0)
    return dict(sorted(totals.items()))


def percent(counts: dict[str, int]) -> float:
    """coverage.py's figure: covered statements and branches over all of them."""
    total = counts["num_statements"] + counts["num_branches"]
    covered = counts["covered_lines"] + counts["covered_branches"]
    return 100.0 * covered / total if total else 100.0


def table(totals: dict[str, dict[str, int]]) -> str:
    """One row per package and a total row."""
    rows = [f"{'package':<34} {'stmts':>6} {'miss':>6} {'branch':>6} {'brmiss':>6} {'cover':>6}"]
    overall = dict.fromkeys(FIELDS, 0)
    for package, counts in totals.items():
        if not counts["num_statements"]:
            continue  # a folder of data files (templates)
        for name in FIELDS:
            overall[name] += counts[name]
        rows.append(_row(package, counts))
    rows.append(_row("TOTAL", overall))
    return "\n".join(rows)


def _row(name: str, counts: dict[str, int]) -> str:
    missed = counts["num_statements"] - counts["covered_lines"]
    partial = counts["num_branches"] - counts["covered_branches"]
    return (
        f"{name:<34} {counts['num_statements']:>6} {missed:>6} {counts['num_branches']:>6} "
        f"{partial:>6} {percent(counts):>5.1f}%"
    )


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_REPORT
    if not path.is_file():
        print(f"error: no coverage report at {path}; run `make check` first", file=sys.stderr)
        return 1
    print("branch coverage per package (the test processes; see scripts/coverage_by_package.py)")
    print(table(by_package(json.loads(path.read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
