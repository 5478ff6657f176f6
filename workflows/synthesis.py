"""Merging the code judge's judgment with the vision-language judge's verdicts (workflow-safe).

The code judge measures the criteria on the trajectory; the VLM judge says whether the video
looks like the behaviour. The intent score weighs them 70/30 (measurements are exact, the video
catches what the criteria missed); a visual criterion not met is a failure tag the reviser
sees. When the two differ by more than DISAGREEMENT, the synthesizer agent looks at the
trajectory and the video with bounded tools and settles the score, kept between the two.
"""

from __future__ import annotations

from workflows.contracts.judging import CriterionScore, Judgment, VisualJudgment
from workflows.contracts.llm import SynthesisResult

CODE_WEIGHT = 0.7
DISAGREEMENT = 0.4


def disagree(code: Judgment, visual: VisualJudgment) -> bool:
    """Whether the two judges differ by more than DISAGREEMENT: the synthesizer settles it."""
    return abs(code.score - visual.score) > DISAGREEMENT


def synthesize(
    code: Judgment,
    visual: VisualJudgment | None,
    pass_threshold: float,
    settled: SynthesisResult | None = None,
) -> Judgment:
    """The rollout's judgment: the code judge's alone without a video verdict, else the two
    weighed 70/30 (or as the synthesizer settled it when they disagree)."""
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
    if disagree(code, visual):
        tags.append("judges_disagree")
        diagnosis += f" The judges disagree (trajectory {code.score:.2f}, video {visual.score:.2f})"
        if settled is not None and settled.score is not None:
            # The agent decides where between the two judges the score lies, never beyond.
            low, high = sorted((code.score, visual.score))
            score = round(min(max(settled.score, low), high), 4)
            tags.append(f"trusted_{settled.trusted}")
            diagnosis += f"; the synthesizer trusted {settled.trusted}: {settled.diagnosis}"
        else:
            diagnosis += ": check the criteria's measurements against the video."
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
        # The code judge's verdict (every criterion met) stands; the video judge weighs in the
        # score, the diagnosis and the tags.
        passed=code.passed,
        diagnosis=diagnosis[:1500],
        criteria=criteria,
        failure_tags=tags,
        code_score=code.score,
        visual_score=visual.score,
        checkpoints=code.checkpoints,
    )
