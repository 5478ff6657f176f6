"""Judge code's answers turned into verdicts on the trusted side.

Judge code a model wrote reports a measured value per criterion; this module never takes its
word for the verdict or the score. Each criterion is met or not by its measured value against
its own target (workflows/verdict.py), and the score is the criteria's progress, computed here.
Where a criterion names a metric the behaviour library computes (a speed, a height,
uprightness, a turn, a duration, a distance), the library measures the same trajectory: a judge
value that disagrees beyond the tolerance is replaced by the library's and said so (validation
sends such a judge back with both numbers, `problems`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from activities.behaviours.metrics import METRICS, MetricUnavailable, Trajectory, compute
from workflows.contracts.judging import Criterion, CriterionScore, Judgment
from workflows.verdict import agree, all_met, meets, progress, score_of, verdict_text

# A judge's own overall score further than this from the mean of its criteria's scores says
# one thing in its criteria and another in its score.
SCORE_DISAGREEMENT = 0.1
# A criterion's score that says "met" (progress just short of the target stays below it).
MET_SCORE = 0.999


def library_values(
    src: bytes | str | Path | Trajectory | dict[str, np.ndarray],
    env_id: str,
    criteria: list[Criterion],
) -> dict[str, float]:
    """The behaviour library's value of every criterion that names a metric it computes on
    this env (the others are left out); the episode as a .npz (path or bytes), its arrays or
    a Trajectory."""
    wanted = [c for c in criteria if c.metric in METRICS and METRICS[c.metric].supports(env_id)]
    if not wanted:
        return {}
    if isinstance(src, Trajectory):
        t = src
    elif isinstance(src, dict):
        t = Trajectory.of(src, env_id)
    else:
        t = Trajectory.load(src, env_id)
    out: dict[str, float] = {}
    for c in wanted:
        assert c.metric is not None
        try:
            out[c.name] = compute(t, c.metric)
        except MetricUnavailable:
            continue
    return out


def verdict_on(
    answer: dict[str, Any],
    criteria: list[Criterion],
    episode: bytes | str | Path | dict[str, np.ndarray],
    env_id: str,
) -> Judgment:
    """The verdict on a judge code's checked answer for one episode, cross-checked by the
    library on that episode (an episode the library cannot read: the judge's values alone)."""
    try:
        library = library_values(episode, env_id, criteria)
    except ValueError:
        library = {}
    return judgment_from_code(answer, criteria, library)


def checked(c: Criterion, env_id: str) -> Criterion:
    """A criterion as data a verdict can be computed from on this env: its metric one the
    library computes here, with the metric's unit, and a `near` one with a positive tolerance;
    ValueError "field <name>: <why>" otherwise."""
    if c.metric is not None:
        known = [name for name, m in METRICS.items() if m.supports(env_id)]
        if c.metric not in known:
            raise ValueError(
                f"field metric: {c.metric!r:.60} is not a behaviour-library metric of {env_id}; "
                f"one of {', '.join(known)}, or leave metric out"
            )
        unit = METRICS[c.metric].unit
        if unit and c.unit and c.unit != unit:
            raise ValueError(
                f"field unit: its metric {c.metric} is measured in {unit}, not {c.unit!r:.20}; "
                f"give the target in {unit}"
            )
        c = c.model_copy(update={"unit": unit or c.unit})
    if c.direction == "near" and not c.tolerance > 0:
        raise ValueError(
            f"field tolerance: a 'near' criterion needs a positive tolerance (got {c.tolerance:g})"
        )
    return c


def disagreements(
    measured: dict[str, float], library: dict[str, float], criteria: list[Criterion]
) -> list[str]:
    """'speed: the judge measured 2.5 m/s, the behaviour library 0.12 m/s' for each criterion
    whose judge value disagrees with the library's beyond its tolerance."""
    out = []
    for c in criteria:
        if c.name not in measured or c.name not in library:
            continue
        if not agree(measured[c.name], library[c.name], c):
            unit = f" {c.unit}" if c.unit else ""
            out.append(
                f"{c.name}: the judge measured {measured[c.name]:.4g}{unit}, the behaviour "
                f"library ({c.metric}) {library[c.name]:.4g}{unit}"
            )
    return out


def judgment_from_code(
    out: dict[str, Any], criteria: list[Criterion], library: dict[str, float] | None = None
) -> Judgment:
    """The Judgment for a checked answer of judge code: each criterion met or not by its
    measured value (the library's where the two disagree), the score from their progress, the
    verdict only when every criterion is met."""
    library = library or {}
    measured: dict[str, float] = dict(out.get("measured") or {})
    differ = disagreements(measured, library, criteria)
    scores: list[CriterionScore] = []
    for c in criteria:
        value = measured.get(c.name)
        if c.name in library and (value is None or not agree(value, library[c.name], c)):
            value = library[c.name]
        known = value is not None
        scores.append(
            CriterionScore(
                name=c.name,
                metric=c.metric or "judge_fn",
                value=round(float(value), 6) if value is not None else 0.0,
                target=c.target,
                direction=c.direction,
                score=round(progress(value, c), 4),
                measured=known,
                unit=c.unit,
                met=meets(value, c),
                tolerance=c.tolerance,
                label=METRICS[c.metric].label if c.metric in METRICS else "",
            )
        )
    passed = all_met(criteria, scores)
    tags = list(out.get("failure_tags") or [])
    verdict = verdict_text(passed, scores)
    # Upper-case the first letter only: criterion names and units keep their case (m/s, rad).
    sentences = [verdict[:1].upper() + verdict[1:] + "."]
    if differ:
        tags.append("judge_disagrees_with_library")
        sentences.append("The library's value was used: " + "; ".join(differ) + ".")
    said = str(out.get("diagnosis") or "").strip()
    if said:
        sentences.append(f"The judge: {said}")
    return Judgment(
        score=score_of(criteria, scores),
        passed=passed,
        diagnosis=" ".join(sentences)[:1500],
        criteria=scores,
        failure_tags=list(dict.fromkeys(str(t) for t in tags)),
    )


def problems(
    out: dict[str, Any], criteria: list[Criterion], library: dict[str, float] | None = None
) -> list[str]:
    """Why a judge's answer on one episode cannot be trusted as a measurement: a value that
    disagrees with the behaviour library's, a criterion scored as met while its measured value
    misses the target (or the reverse), an overall score unlike its criteria's. Empty: none."""
    found = disagreements(out.get("measured") or {}, library or {}, criteria)
    scores: dict[str, float] = out.get("criteria") or {}
    measured: dict[str, float] = out.get("measured") or {}
    for c in criteria:
        if c.name not in scores or c.name not in measured:
            continue
        met, said = meets(measured[c.name], c), scores[c.name]
        unit = f" {c.unit}" if c.unit else ""
        target = f"{c.direction.replace('_', ' ')} {c.target:g}{unit}"
        if said >= MET_SCORE and not met:
            found.append(
                f"{c.name}: scored {said:.2f} (met) but its measured {measured[c.name]:.4g}{unit} "
                f"misses the target {target}"
            )
        elif said < 0.5 and met:
            found.append(
                f"{c.name}: scored {said:.2f} but its measured {measured[c.name]:.4g}{unit} "
                f"meets the target {target}"
            )
    own = out.get("score")
    weighed = [(max(c.weight, 0.0), scores[c.name]) for c in criteria if c.name in scores]
    total = sum(w for w, _ in weighed)
    if own is not None and total > 0:
        # The criteria's weighted mean (their plain mean where, as elicited, they weigh alike).
        mean = sum(w * s for w, s in weighed) / total
        if abs(float(own) - mean) > SCORE_DISAGREEMENT:
            found.append(
                f"its overall score {float(own):.2f} disagrees with its criteria's scores "
                f"(mean {mean:.2f}); score each criterion and let the overall score follow them"
            )
    return found
