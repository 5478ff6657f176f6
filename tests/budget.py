"""The fast tier's budget per test, reported after every run (a report, never a failure: the
machines are noisy).

A test not marked `slow` that takes longer than the budget (setup, call and teardown together)
is listed at the end of the run with its time, so that it is made cheaper or marked slow. The
budget is `POLICYFORGE_TEST_BUDGET_S` seconds (20 by default). Loaded by tests/conftest.py; with
pytest-xdist the reports reach the controlling process, which prints the list once.
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

DEFAULT_BUDGET_S = 20.0


def budget_s() -> float:
    """The budget in seconds (`POLICYFORGE_TEST_BUDGET_S`, else 20)."""
    raw = os.environ.get("POLICYFORGE_TEST_BUDGET_S", "")
    try:
        return float(raw) if raw else DEFAULT_BUDGET_S
    except ValueError:
        raise pytest.UsageError(
            f"POLICYFORGE_TEST_BUDGET_S={raw!r} is not a number of seconds; set e.g. 20"
        ) from None


class BudgetReport:
    """Adds up each test's phases and lists the fast-tier tests over the budget."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.seconds: dict[str, float] = defaultdict(float)
        self.slow: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration
        if "slow" in report.keywords:
            self.slow.add(report.nodeid)

    def offenders(self) -> list[tuple[str, float]]:
        """Fast-tier tests over the budget, slowest first."""
        over = [
            (nodeid, seconds)
            for nodeid, seconds in self.seconds.items()
            if nodeid not in self.slow and seconds > self.budget
        ]
        return sorted(over, key=lambda item: -item[1])

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        fast = len(self.seconds.keys() - self.slow)
        if not fast:
            return
        over = self.offenders()
        title = f"fast-tier budget: {self.budget:g} s per test"
        terminalreporter.write_sep("=", title)
        if not over:
            terminalreporter.write_line(f"all {fast} fast-tier tests within {self.budget:g} s")
            return
        terminalreporter.write_line(
            f"{len(over)} of {fast} fast-tier tests over {self.budget:g} s "
            "(make them cheaper, or mark them slow):"
        )
        for nodeid, seconds in over:
            terminalreporter.write_line(f"  {seconds:7.1f} s  {nodeid}")
