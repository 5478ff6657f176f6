"""Verdicts from measurements (workflow-safe: plain Python, no numpy).

A criterion is data: what it measures, a comparison (at least / at most / near), a target, a
tolerance and a unit. Judges (the built-in metrics, or judge code a model wrote) only report
measured values; this module decides, on the trusted side, whether each criterion is met and
whether a rollout passes: **only when every criterion is met**. The score (a weighted mean of
each criterion's progress towards its target) stays, as progress for the reviser and the
charts, never as the verdict. A criterion that could not be measured is not met.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol

from workflows.contracts.judging import DIRECTION_WORDS, Criterion, CriterionScore

# Measured values within this share of the target (or of the value) agree with a cross-check:
# two sound measures of one quantity differ by their averaging windows and rounding, not more.
AGREEMENT_SHARE = 0.05
# ... and within this many units of the target's own scale for targets near zero.
AGREEMENT_FLOOR = 0.02


def meets(value: float | None, c: Criterion) -> bool:
    """Whether a measured value meets the criterion's comparison (None, NaN: not measured)."""
    if value is None or not math.isfinite(value):
        return False
    if c.direction == "near":
        return abs(value - c.target) <= c.tolerance
    if c.direction == "at_least":
        return value >= c.target
    return value <= c.target


def progress(value: float | None, c: Criterion) -> float:
    """How far a value has come towards the criterion, in [0, 1]: 1 exactly when it is met,
    falling towards 0 with the shortfall (the score the reviser and the charts follow)."""
    if value is None or not math.isfinite(value):
        return 0.0
    if meets(value, c):
        return 1.0
    t = c.target
    if c.direction == "near":
        # Linear to 0 at three tolerances off target: "near" is judged on the tolerance's scale.
        scale = 2.0 * c.tolerance if c.tolerance > 0 else max(0.1 * abs(t), 1e-6)
        return _below_one(1.0 - (abs(value - t) - c.tolerance) / scale)
    if c.direction == "at_least":
        return _below_one(value / t if t > 0 else 1.0 - (t - value) / max(abs(t), 1.0))
    return _below_one(t / value if t > 0 else 1.0 - (value - t) / max(abs(t), 1.0))


def _below_one(x: float) -> float:
    """A shortfall's progress: in [0, 1), since only a met criterion reaches 1."""
    return float(min(max(x, 0.0), 0.9999))


def agree(judge_value: float, library_value: float, c: Criterion) -> bool:
    """Whether a judge's measured value agrees with the behaviour library's on one trajectory:
    within the criterion's tolerance, AGREEMENT_SHARE of the larger magnitude, or a floor."""
    scale = max(abs(c.target), abs(library_value), abs(judge_value))
    allowed = max(c.tolerance, AGREEMENT_SHARE * scale, AGREEMENT_FLOOR)
    return abs(judge_value - library_value) <= allowed


def score_of(criteria: Sequence[Criterion], scores: Sequence[CriterionScore]) -> float:
    """The weighted mean of the criteria's scores (progress), in [0, 1]."""
    weights = {c.name: max(c.weight, 0.0) for c in criteria}
    total = sum(weights.get(s.name, 0.0) for s in scores)
    if total <= 0:
        return 0.0
    mean = sum(weights.get(s.name, 0.0) * s.score for s in scores) / total
    return round(min(max(mean, 0.0), 1.0), 4)


def all_met(criteria: Sequence[Criterion], scores: Sequence[CriterionScore]) -> bool:
    """The verdict: there are criteria, and every one of them was measured and met."""
    by_name = {s.name: s for s in scores}
    return bool(criteria) and all(
        c.name in by_name and by_name[c.name].met is True for c in criteria
    )


def is_met(s: CriterionScore) -> bool:
    """Whether a judged criterion is met; judgments recorded before verdicts were computed
    (met None) count a full score as met."""
    return s.met if s.met is not None else s.score >= 1.0


def unmet(scores: Iterable[CriterionScore]) -> list[CriterionScore]:
    """The criteria not met, in their order."""
    return [s for s in scores if not is_met(s)]


def _num(value: float, unit: str, decimals: int = 2) -> str:
    text = f"{value:.{decimals}f}" if abs(value) >= 0.01 or value == 0 else f"{value:.3g}"
    return f"{text} {unit}".rstrip()


def decimals_apart(value: float, target: float) -> int:
    """Decimals that show an unmet value apart from its target ('0.145 m/s, target at least
    0.150 m/s', never '0.15 m/s, target at least 0.15 m/s'); 2 where two already do."""
    for decimals in range(2, 7):
        if f"{value:.{decimals}f}" != f"{target:.{decimals}f}":
            return decimals
    return 6


def target_text(s: CriterionScore | Criterion, decimals: int = 2) -> str:
    """'at least 2.00 m/s', 'at most 0.20 m/s', 'near 1.00 m/s ± 0.08 m/s'."""
    word = DIRECTION_WORDS.get(s.direction, s.direction)
    text = f"{word} {_num(s.target, s.unit, decimals)}"
    tolerance = getattr(s, "tolerance", 0.0)
    if s.direction == "near" and tolerance:
        text += f" ± {_num(tolerance, s.unit)}"
    return text


def shortfall(s: CriterionScore) -> str:
    """One unmet criterion in a verdict: 'forward speed 1.74 m/s, target at least 2.00 m/s'."""
    name = s.label or s.name.replace("_", " ")
    if s.metric == "vlm":
        return f"{name}: the video judge says {s.verdict.replace('_', ' ') or 'not met'}"
    if not s.measured:
        return f"{name} not measured, target {target_text(s)}"
    decimals = decimals_apart(s.value, s.target)
    return f"{name} {_num(s.value, s.unit, decimals)}, target {target_text(s, decimals)}"


def verdict_text(passed: bool, scores: Sequence[CriterionScore], limit: int = 3) -> str:
    """The verdict in words: 'passed', or 'not passed: forward speed 1.74 m/s, target at least
    2.00 m/s' naming up to `limit` unmet criteria."""
    if passed:
        return "passed"
    missing = unmet(scores)
    if not missing:  # no criteria recorded (an older record), or a witness said no
        return "not passed"
    shown = "; ".join(shortfall(s) for s in missing[:limit])
    more = f" (and {len(missing) - limit} more)" if len(missing) > limit else ""
    return f"not passed: {shown}{more}"


def heading(title: str, passed: bool, score: float, scores: Sequence[CriterionScore]) -> str:
    """'# Iteration 1: not passed: forward speed 1.20 m/s, target at least 3.00 m/s (score
    0.35)': a judgment's first line for agents, the verdict before the progress."""
    return f"# {title}: {verdict_text(passed, scores)} (score {score:.2f})"


class _Verdicted(Protocol):
    passed: bool
    criteria: list[CriterionScore]


def record_verdict(rec: _Verdicted) -> str:
    """An iteration's (or a judgment's) verdict in words, from its criteria as judged."""
    return verdict_text(rec.passed, rec.criteria)
