"""The code judge: measure a trajectory against the session's criteria, score, and explain.

Each criterion is met or not by its measured value (workflows/verdict.py) and the judgment
passes only when every one is met; its score (the weighted mean of each criterion's progress,
discounted by survival) is progress, not the verdict. The diagnosis names measured numbers
against targets in at most three sentences and the failure tags are short snake_case words the
reviser acts on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from activities.behaviours.metrics import METRICS, MetricUnavailable, Trajectory, compute
from workflows.contracts.judging import Criterion, CriterionScore, Judgment
from workflows.verdict import all_met, decimals_apart, meets, progress

# (tag when the value is below the target, tag when above) for a failing criterion.
TAGS: dict[str, tuple[str | None, str | None]] = {
    "mean_x_velocity": ("too_slow", "too_fast"),
    "mean_backward_velocity": ("too_slow", "too_fast"),
    "forward_distance": ("too_little_progress", "too_far"),
    "mean_horizontal_speed": ("too_slow", "drifts"),
    "mean_height": ("too_low", "too_high"),
    "late_mean_height": ("too_low", "too_high"),
    "max_height": ("jumps_too_low", "jumps_too_high"),
    "alive_fraction": ("falls_early", None),
    "mean_uprightness": ("not_upright", None),
    "late_uprightness": ("not_upright", None),
    "late_torso_pitch_up": ("not_reared_up", "over_rotated"),
    "mean_yaw_rate": ("spins_too_slowly", "spins_too_fast"),
    "mean_clockwise_yaw_rate": ("spins_too_slowly", "spins_too_fast"),
    "mean_abs_pole_angle": (None, "pole_wobbles"),
    "upright_fraction": ("pole_falls", None),
    "final_distance_to_target": (None, "misses_target"),
    "mean_distance_to_target": (None, "reaches_slowly"),
    "final_joint_speed": (None, "not_still"),
    "mean_abs_action": ("too_passive", "wasteful_actions"),
}
_VELOCITY = (
    "mean_x_velocity",
    "mean_backward_velocity",
    "mean_yaw_rate",
    "mean_clockwise_yaw_rate",
)
# Metrics that already count the steps after a fall; every other criterion only counts for the
# share of the episode the robot survived (a squat held for 20 of 1000 steps is not held).
SURVIVAL_METRICS = ("alive_fraction", "upright_fraction")
COST_DOMINANCE = 0.5  # a penalty term "dominates" above this fraction of the rewarded terms
BONUS_DOMINANCE = 3.0  # a constant bonus "dominates" above this multiple of the rewarded terms


def criterion_score(value: float, c: Criterion) -> float:
    """A criterion's progress: 1 exactly when it is met, falling towards 0 with the shortfall."""
    return progress(value, c)


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def _fmt(value: float, unit: str, decimals: int = 2) -> str:
    small = abs(value) < 0.01 and value != 0
    text = f"{value:.3g}" if small and decimals == 2 else f"{value:.{decimals}f}"
    return f"{text} {unit}".rstrip()


def _target_text(c: Criterion, unit: str, decimals: int = 2) -> str:
    if c.direction == "near":
        return f"{_fmt(c.target, unit, decimals)} ± {_fmt(c.tolerance, unit)}"
    word = "at least" if c.direction == "at_least" else "at most"
    return f"{word} {_fmt(c.target, unit, decimals)}"


def _metric(c: Criterion) -> str:
    """The criterion's metric; ValueError for one without (an LLM-elicited criterion, which
    only its judge code measures)."""
    if c.metric is None:
        raise ValueError(f"criterion {c.name!r} names no metric: the code judge cannot measure it")
    return c.metric


def _describe(t: Trajectory, c: Criterion, value: float) -> str:
    m = METRICS[_metric(c)]
    # An unmet value is shown with the decimals that tell it from its target ("0.147 m/s
    # against a target of at least 0.150 m/s", never "0.15 ... at least 0.15").
    d = 2 if meets(value, c) else decimals_apart(value, c.target)
    text = f"{m.label} {_fmt(value, m.unit, d)} against a target of {_target_text(c, m.unit, d)}"
    if c.metric in _VELOCITY and c.direction == "at_least" and c.target > 0:
        if value < 0:
            text += "; the policy goes the wrong way"
        elif value < 0.1 * c.target:
            text += "; the policy barely " + ("turns" if "yaw" in c.metric else "moves")
    if c.metric == "alive_fraction" and t.terminated:
        text += f" (the episode ended after {t.length} of {t.horizon} steps)"
    return text


def _tags_for(c: Criterion, value: float) -> list[str]:
    low, high = TAGS.get(_metric(c), ("below_target", "above_target"))
    tag = low if value < c.target else high
    out = [tag or f"{c.metric}_off_target"]
    if c.metric in _VELOCITY and value < 0 < c.target:
        out.append("wrong_direction")
    return out


def _term_balance(t: Trajectory) -> tuple[list[str], str | None]:
    """Tags and a sentence when a penalty or a constant bonus outweighs the rewarded terms.

    The judge does not know which term expresses the intent, so it reads the shapes: a term that
    is never positive is a penalty, a constant positive one an alive bonus, the rest are rewarded.
    """
    series = {k: v for k, v in t.terms().items() if len(v) and np.all(np.isfinite(v))}
    constant = {k for k, v in series.items() if float(np.ptp(v)) < 1e-9}
    penalties = {k for k, v in series.items() if k not in constant and float(np.max(v)) <= 0}
    rewarded = [k for k in series if k not in constant and k not in penalties]
    if not rewarded:
        return [], None
    task = sum(abs(float(np.mean(series[k]))) for k in rewarded)
    tags, worst = [], None
    for k in sorted(series, key=lambda k: float(np.mean(series[k]))):
        m = float(np.mean(series[k]))
        if k in penalties and -m > COST_DOMINANCE * task:
            tags.append(f"{k}_cost_dominates")
            worst = worst or f"the {k} term averaged {m:.3g} per step against {task:.3g}"
        elif k in constant and m > 0 and m > BONUS_DOMINANCE * task:
            tags.append(f"{k}_bonus_dominates")
            worst = worst or f"the constant {k} bonus ({m:.3g} per step) dwarfs {task:.3g}"
    if worst:
        worst = worst[0].upper() + worst[1:] + " for the rewarded terms."
    return tags, worst


def judge(t: Trajectory, criteria: list[Criterion], pass_threshold: float) -> Judgment:
    """Score a loaded trajectory against the criteria: per-criterion scores (discounted by
    survival), a diagnosis of at most three sentences and failure tags."""
    scores: list[CriterionScore] = []
    failing: list[tuple[float, str]] = []  # (weighted shortfall, description)
    tags: list[str] = []
    unmeasurable: list[str] = []
    alive = compute(t, "alive_fraction")
    for c in criteria:
        try:
            value = compute(t, _metric(c))
        except MetricUnavailable as exc:
            scores.append(_score(c, 0.0, 0.0, met=False, measured=False))
            unmeasurable.append(f"{c.name}: {exc}")
            tags.append("unmeasurable_criterion")
            continue
        met = meets(value, c)
        # Survival discounts the progress of what was measured while alive (a squat held for
        # 20 of 1000 steps is not held); whether it is met is its value, and falling is judged
        # by its own criterion (alive_fraction).
        reached = criterion_score(value, c)
        s = reached if c.metric in SURVIVAL_METRICS else reached * alive
        scores.append(_score(c, value, s, met=met))
        if not met:
            failing.append((c.weight * (1.0 - s) + 1.0, _describe(t, c, value)))
            tags.extend(_tags_for(c, value))
        elif s < 1.0:
            shown = f"{_describe(t, c, value)}, but only for {t.length} of {t.horizon} steps"
            failing.append((c.weight * (1.0 - s), shown))
    total_w = sum(max(c.weight, 0.0) for c in criteria)
    score = (
        sum(max(c.weight, 0.0) * s.score for c, s in zip(criteria, scores, strict=True)) / total_w
        if total_w > 0
        else 0.0
    )
    score = round(_clip(score), 4)
    del pass_threshold  # the verdict is every criterion met; the score is progress
    passed = all_met(criteria, scores)

    sentences: list[str] = []
    if not criteria:
        sentences.append("No criteria to judge against.")
    elif passed:
        shown = "; ".join(
            _describe(t, c, s.value) for c, s in list(zip(criteria, scores, strict=True))[:2]
        )
        sentences.append(f"All criteria met: {shown}.")
    else:
        # The verdict first, naming the unmet criteria (their shortfall carries a +1, so they
        # sort before the met ones cut short by a fall); then what else fell short.
        failing.sort(key=lambda f: -f[0])
        unmet_text = [d for w, d in failing if w >= 1.0]
        if unmet_text:
            sentences.append("Not passed: " + "; ".join(unmet_text[:2]) + ".")
        rest = [d for w, d in failing if w < 1.0] + unmet_text[2:]
        if rest:
            sentences.append("Also short: " + "; ".join(rest[:2]) + ".")
        if unmeasurable:
            sentences.append("Not measurable: " + "; ".join(unmeasurable) + ".")
    if not passed:
        balance_tags, balance = _term_balance(t)
        tags.extend(balance_tags)
        if balance and len(sentences) < 3:
            sentences.append(balance)
    return Judgment(
        score=score,
        passed=passed,
        diagnosis=" ".join(sentences[:3]),
        criteria=scores,
        failure_tags=list(dict.fromkeys(tags)),
    )


def _cap(text: str) -> str:
    return text[0].upper() + text[1:] if text else text


def _score(
    c: Criterion, value: float, score: float, *, met: bool, measured: bool = True
) -> CriterionScore:
    m = METRICS.get(_metric(c))
    return CriterionScore(
        name=c.name,
        metric=_metric(c),
        value=round(value, 4),
        target=c.target,
        direction=c.direction,
        score=round(score, 4),
        measured=measured,
        unit=c.unit or (m.unit if m is not None else ""),
        met=met,
        tolerance=c.tolerance,
        label=m.label if m is not None else "",
    )


def judge_trajectory(
    npz: bytes | str | Path, env_id: str, criteria: list[Criterion], pass_threshold: float
) -> Judgment:
    """Judge a trajectory file (path) or its bytes; TrajectoryError when it cannot be read."""
    return judge(Trajectory.load(npz, env_id), criteria, pass_threshold)
