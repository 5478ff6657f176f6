"""The fast tier's budget report: which tests it lists, and what it prints."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.budget import BudgetReport, budget_s


def _report(nodeid: str, seconds: float, *marks: str) -> Any:
    return SimpleNamespace(nodeid=nodeid, duration=seconds, keywords=dict.fromkeys(marks, 1))


class _Terminal:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, _sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_lists_fast_tests_over_the_budget_phases_added_up_slow_ones_never():
    budget = BudgetReport(10.0)
    for report in (
        _report("t.py::setup_heavy", 6.0),  # setup ...
        _report("t.py::setup_heavy", 5.0),  # ... plus call: 11 s
        _report("t.py::quick", 9.9),
        _report("t.py::marked", 50.0, "slow"),
        _report("t.py::worst", 30.0),
    ):
        budget.pytest_runtest_logreport(report)
    assert budget.offenders() == [("t.py::worst", 30.0), ("t.py::setup_heavy", 11.0)]
    terminal = _Terminal()
    budget.pytest_terminal_summary(terminal)  # type: ignore[arg-type]
    assert "2 of 3 fast-tier tests over 10 s" in terminal.lines[1]
    assert terminal.lines[2].split() == ["30.0", "s", "t.py::worst"]


def test_a_run_within_the_budget_says_so_and_a_bad_budget_is_refused(monkeypatch):
    budget = BudgetReport(20.0)
    budget.pytest_runtest_logreport(_report("t.py::quick", 1.0))
    terminal = _Terminal()
    budget.pytest_terminal_summary(terminal)  # type: ignore[arg-type]
    assert terminal.lines[-1] == "all 1 fast-tier tests within 20 s"
    monkeypatch.setenv("POLICYFORGE_TEST_BUDGET_S", "7.5")
    assert budget_s() == 7.5
    monkeypatch.setenv("POLICYFORGE_TEST_BUDGET_S", "fast")
    with pytest.raises(pytest.UsageError, match="POLICYFORGE_TEST_BUDGET_S"):
        budget_s()
