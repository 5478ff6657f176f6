"""A benchmark's aggregate over its cases: overall, by category, by difficulty and by env
(plain functions over the case results: workflow-safe, and what the tests check by hand)."""

from __future__ import annotations

from collections.abc import Callable

from workflows.contracts.benchmark import CaseResult, GroupStats


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def stats(cases: list[CaseResult]) -> GroupStats:
    """One group's figures; rates and means over the finished cases (iterations to pass over
    the passed ones)."""
    finished = [c for c in cases if c.finished]
    passed = [c for c in finished if c.passed]
    return GroupStats(
        cases=len(cases),
        finished=len(finished),
        passed=len(passed),
        pass_rate=round(len(passed) / len(finished), 4) if finished else None,
        mean_best_score=_mean([c.best_score for c in finished if c.best_score is not None]),
        mean_iterations_to_pass=_mean(
            [float(c.iterations_to_pass) for c in passed if c.iterations_to_pass is not None]
        ),
        mean_wall_seconds=_mean([c.wall_seconds for c in finished if c.wall_seconds is not None]),
        tokens=sum(c.tokens for c in cases),
        cost_usd=round(sum(c.cost_usd for c in cases), 6),
    )


def by(cases: list[CaseResult], key: Callable[[CaseResult], str]) -> dict[str, GroupStats]:
    """Figures per value of `key`, in the order the values first appear."""
    groups: dict[str, list[CaseResult]] = {}
    for case in cases:
        groups.setdefault(key(case), []).append(case)
    return {name: stats(members) for name, members in groups.items()}
