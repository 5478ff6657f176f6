"""Merging the code judge's judgment with the vision-language judge's verdicts (workflow-safe).

The code judge measures the criteria on the trajectory; the video judge is a witness: it says
whether the video looks like the behaviour, having been told what the trajectory judge
measures. The verdict rule:

- The rollout passes only when the code judge found every criterion met: the video judge can
  never make a pass out of an unmet criterion.
- A visual criterion "not met" where the code judge passed is a disagreement on the verdict:
  the synthesizer settles it. Trusting the trajectory lets the pass stand; trusting the video
  withholds it; anything else (it trusted both, gave no usable answer, or could not be asked)
  fails closed: not passed, and the diagnosis says why. "Partly" does not block a pass.
- Without a video verdict (no video judge, or it was unavailable), the code judge's judgment
  stands alone, and its note says the video judge was unavailable.

The intent score (progress, not the verdict) weighs the two 70/30 (measurements are exact, the
video catches what the criteria missed); when they differ by more than DISAGREEMENT the
synthesizer settles it too, kept between the two. Visual criteria join the judgment's
criteria as verdicts (metric "vlm"), never as measurements.
"""

from __future__ import annotations

from workflows.contracts.judging import CriterionScore, Judgment, VisualJudgment
from workflows.contracts.llm import SynthesisResult

CODE_WEIGHT = 0.7
DISAGREEMENT = 0.4
# The failure tag of a judgment the video judge did not take part in, for lack of an answer.
VIDEO_UNAVAILABLE = "video_judge_unavailable"


def disagree(code: Judgment, visual: VisualJudgment) -> bool:
    """Whether the two judges' scores differ by more than DISAGREEMENT: the synthesizer
    settles it."""
    return abs(code.score - visual.score) > DISAGREEMENT


def verdicts_conflict(code: Judgment, visual: VisualJudgment) -> bool:
    """Whether the judges disagree on the verdict: the code judge passed the rollout and the
    video judge says a visual criterion is not met (the synthesizer settles it)."""
    return code.passed and any(v.verdict == "not_met" for v in visual.verdicts)


def without_video(code: Judgment, note: str) -> Judgment:
    """The code judge's judgment alone, when the video judge could not give one: its verdict
    and score stand, and the note (one line) says why the video judge is missing."""
    return code.model_copy(
        update={
            "diagnosis": f"{code.diagnosis} {_sentence(note)}"[:1500],
            "failure_tags": [*code.failure_tags, VIDEO_UNAVAILABLE],
            "video_note": note,
        }
    )


def synthesize(
    code: Judgment,
    visual: VisualJudgment | None,
    pass_threshold: float,
    settled: SynthesisResult | None = None,
    *,
    witness: bool = False,
    note: str | None = None,
) -> Judgment:
    """The rollout's judgment: the code judge's alone without a video verdict, else the two
    weighed 70/30 (or as the synthesizer settled it when they disagree).

    `witness`: the verdict rule above applies (a visual "not met" against a code pass goes to
    the synthesizer); False keeps the code judge's verdict as is (histories recorded before
    the rule). `note`: why the synthesizer could not settle a disagreement ("synthesizer
    unavailable: ..."), for the diagnosis and the judgment's video note."""
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
    answer = settled if settled is not None and settled.score is not None else None
    conflict = witness and verdicts_conflict(code, visual)
    if disagree(code, visual) or conflict:
        tags.append("judges_disagree")
        if conflict:
            said = ", ".join(v.name for v in visual.verdicts if v.verdict == "not_met")
            diagnosis += (
                " The judges disagree: every measured criterion is met, the video judge says "
                f"{said} not met"
            )
        else:
            diagnosis += (
                f" The judges disagree (trajectory {code.score:.2f}, video {visual.score:.2f})"
            )
        if answer is not None:
            assert answer.score is not None
            # The agent decides where between the two judges the score lies, never beyond.
            low, high = sorted((code.score, visual.score))
            score = round(min(max(answer.score, low), high), 4)
            tags.append(f"trusted_{answer.trusted}")
            diagnosis += f"; the synthesizer trusted {answer.trusted}: {answer.diagnosis}"
        elif note:
            diagnosis += f"; {note}"
        else:
            diagnosis += ": check the criteria's measurements against the video."
    passed = code.passed
    if conflict:
        # A witness that says no withholds the pass unless the synthesizer, having looked,
        # trusts the trajectory; an unsettled disagreement fails closed.
        passed = answer is not None and answer.trusted == "trajectory"
        if answer is None or answer.trusted == "both":
            diagnosis += " Not passed: nothing settled whether the visual criterion is met."
    criteria = list(code.criteria) + [
        CriterionScore(
            name=f"visual:{v.name}",
            metric="vlm",
            value=v.score,
            target=1.0,
            direction="at_least",
            score=v.score,
            measured=False,
            met=v.verdict == "met",
            verdict=v.verdict,
            reason=v.reason,
        )
        for v in visual.verdicts
    ]
    return Judgment(
        score=score,
        passed=passed,
        diagnosis=diagnosis[:1500],
        criteria=criteria,
        failure_tags=tags,
        code_score=code.score,
        visual_score=visual.score,
        checkpoints=code.checkpoints,
        checkpoint_measured=code.checkpoint_measured,
        video_note=note,
    )


def _sentence(text: str) -> str:
    """`text` as a sentence: capitalised, ending in a full stop."""
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
