"""Merging the code judge's judgment with the vision-language judge's verdicts (workflow-safe).

The code judge measures the criteria on the trajectory; the VLM judge says whether the video
looks like the behaviour. The intent score weighs them 70/30 (measurements are exact, the video
catches what the criteria missed); a visual criterion not met is a failure tag the reviser
sees, and a gap of more than DISAGREEMENT between the two is called out in the diagnosis.
"""

from __future__ import annotations

from workflows.models import CriterionScore, Judgment, VisualJudgment

CODE_WEIGHT = 0.7
DISAGREEMENT = 0.4


def synthesize(code: Judgment, visual: VisualJudgment | None, pass_threshold: float) -> Judgment:
    if visual is None:
        return code
    score = round(CODE_WEIGHT * code.score + (1 - CODE_WEIGHT) * visual.score, 4)
    seen = [v for v in visual.verdicts if v.verdict != "met"]
    diagnosis = code.diagnosis
    if seen:
        diagnosis += " Video: " + "; ".join(f"{v.name} {v.verdict}: {v.reason}" for v in seen)
    else:
        diagnosis += " Video: every visual criterion met."
    tags = list(code.failure_tags)
    tags += [f"visual_{v.name}" for v in visual.verdicts if v.verdict == "not_met"]
    if abs(code.score - visual.score) > DISAGREEMENT:
        tags.append("judges_disagree")
        diagnosis += (
            f" The judges disagree (trajectory {code.score:.2f}, video {visual.score:.2f}): "
            "check the criteria's measurements against the video."
        )
    criteria = list(code.criteria) + [
        CriterionScore(
            name=f"visual:{v.name}",
            metric="vlm",
            value=v.score,
            target=1.0,
            direction="at_least",
            score=v.score,
        )
        for v in visual.verdicts
    ]
    return Judgment(
        score=score,
        passed=score >= pass_threshold,
        diagnosis=diagnosis[:1500],
        criteria=criteria,
        failure_tags=tags,
        code_score=code.score,
        visual_score=visual.score,
        checkpoints=code.checkpoints,
    )
