"""The verdict with a witness (workflows/synthesis.py): the video judge never makes a pass out
of an unmet criterion; its "not met" against a code pass is settled by the synthesizer, and
without a settled answer the rollout does not pass; an unavailable video judge leaves the code
judge's judgment standing, saying so."""

from __future__ import annotations

import pytest

from workflows.contracts.judging import (
    CriterionScore,
    Judgment,
    VisualJudgment,
    VisualVerdict,
)
from workflows.contracts.llm import SynthesisResult
from workflows.synthesis import (
    VIDEO_UNAVAILABLE,
    disagree,
    synthesize,
    verdicts_conflict,
    without_video,
)
from workflows.verdict import verdict_text

SPEED = CriterionScore(
    name="speed", metric="", value=2.1, target=2.0, direction="at_least", score=1.0, unit="m/s",
    met=True,
)  # fmt: skip


def code(passed: bool = True, score: float = 1.0) -> Judgment:
    criterion = SPEED if passed else SPEED.model_copy(update={"value": 1.2, "met": False})
    return Judgment(
        score=score,
        passed=passed,
        diagnosis="speed 2.1 m/s.",
        criteria=[criterion],
        checkpoints={"100": score},
        checkpoint_measured={"100": {"speed": criterion.value}},
    )


def video(*verdicts: str) -> VisualJudgment:
    scores = {"met": 1.0, "partly": 0.5, "not_met": 0.0}
    items = [
        VisualVerdict(name=f"v{i}", verdict=v, score=scores[v], reason=f"seen {v} at 1 s")
        for i, v in enumerate(verdicts)
    ]
    return VisualJudgment(
        score=sum(v.score for v in items) / len(items), verdicts=items, shown="video"
    )


def settled(trusted: str, score: float | None = 0.9) -> SynthesisResult:
    return SynthesisResult(score=score, trusted=trusted, diagnosis="looked at 1-2 s")


def test_without_a_video_verdict_the_code_judgment_stands():
    assert synthesize(code(), None, 0.9) == code()


def test_the_video_judge_cannot_make_a_pass_of_an_unmet_criterion():
    for trusted in ("video", "trajectory", "both"):
        judged = synthesize(code(passed=False, score=0.6), video("met"), 0.9, settled(trusted))
        assert not judged.passed
    assert not verdicts_conflict(code(passed=False), video("not_met"))


def test_a_pass_with_every_visual_criterion_met_or_partly_stands():
    judged = synthesize(code(), video("met", "partly"), 0.9, witness=True)
    assert judged.passed and judged.score == pytest.approx(0.7 + 0.3 * 0.75)
    assert not verdicts_conflict(code(), video("met", "partly"))


@pytest.mark.parametrize(
    ("answer", "passed", "says"),
    [
        (settled("trajectory"), True, "the synthesizer trusted trajectory: looked at 1-2 s"),
        (settled("video", 0.4), False, "the synthesizer trusted video"),
        # "both" settles nothing, and neither does an answer without a usable score.
        (settled("both"), False, "Not passed: nothing settled"),
        (settled("trajectory", None), False, "Not passed: nothing settled"),
        (None, False, "Not passed: nothing settled"),
    ],
)
def test_a_visual_not_met_against_a_code_pass_is_settled(answer, passed, says):
    seen = video("met", "met", "not_met")
    assert verdicts_conflict(code(), seen)
    assert not disagree(code(), seen)  # 1.0 vs 0.67: the scores alone would not ask
    judged = synthesize(code(), seen, 0.9, answer, witness=True)
    assert judged.passed is passed
    assert {"judges_disagree", "visual_v2"} <= set(judged.failure_tags)
    assert "the video judge says v2 not met" in judged.diagnosis and says in judged.diagnosis
    if not passed:
        assert "v2: the video judge says not met" in verdict_text(judged.passed, judged.criteria)


def test_histories_before_the_rule_keep_the_code_verdict():
    judged = synthesize(code(), video("not_met"), 0.9, settled("video", 0.2))
    assert judged.passed and judged.score == pytest.approx(0.2)


def test_an_unavailable_synthesizer_fails_closed_and_says_why():
    note = "synthesizer unavailable: LLMServerError: overloaded"
    judged = synthesize(code(), video("not_met"), 0.9, None, witness=True, note=note)
    assert not judged.passed and judged.video_note == note
    assert note in judged.diagnosis and "Not passed: nothing settled" in judged.diagnosis
    # Scores apart only (no verdict at stake): the code verdict stands, with the note.
    score_only = synthesize(code(passed=False, score=0.2), video("met"), 0.9, None, note=note)
    assert not score_only.passed and note in score_only.diagnosis


def test_visual_criteria_are_verdicts_never_measurements():
    judged = synthesize(code(), video("met", "partly", "not_met"), 0.9, settled("trajectory"))
    visual = [c for c in judged.criteria if c.metric == "vlm"]
    assert [(c.verdict, c.met, c.measured) for c in visual] == [
        ("met", True, False),
        ("partly", False, False),
        ("not_met", False, False),
    ]
    lines = [c.line() for c in judged.criteria]
    assert lines[0] == "- speed: measured 2.1 m/s against at least 2 m/s: met"
    assert lines[3] == "- visual:v2: the video judge says not met: seen not_met at 1 s"
    assert not any("measured" in line for line in lines[1:])
    # The code judge's measurements over training go through to the reviser.
    assert judged.checkpoint_measured == {"100": {"speed": 2.1}}


def test_an_unavailable_video_judge_leaves_the_code_judgment_saying_so():
    note = "video judge unavailable: LLMServerError: 500 internal error"
    judged = without_video(code(), note)
    assert judged.passed and judged.score == 1.0 and judged.criteria == code().criteria
    assert judged.video_note == note and VIDEO_UNAVAILABLE in judged.failure_tags
    assert (
        judged.diagnosis
        == "speed 2.1 m/s. Video judge unavailable: LLMServerError: 500 internal error."
    )
