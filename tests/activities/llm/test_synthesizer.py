"""The synthesizer's first message: when the judges disagree on the verdict, it is told that
its answer decides whether the rollout passes."""

from __future__ import annotations

from activities.llm.agents.synthesizer import opening
from workflows.contracts.judging import Judgment, VisualCriterion, VisualJudgment, VisualVerdict
from workflows.contracts.llm import SynthesisRequest


def request(passed: bool, verdict: str) -> SynthesisRequest:
    return SynthesisRequest(
        session_id="s",
        prompt="run forward",
        env_id="HalfCheetah-v5",
        llm_model="claude-sonnet-4-6",
        code=Judgment(score=1.0 if passed else 0.3, passed=passed, diagnosis="fast"),
        visual=VisualJudgment(
            score=0.0,
            verdicts=[VisualVerdict(name="runs", verdict=verdict, score=0.0, reason="still")],
            shown="video",
        ),
        visual_criteria=[VisualCriterion(name="runs", look_for="the floor slides left")],
        video_key="v.mp4",
        trajectory_key="t.npz",
        folder="f/",
    )


def test_the_synthesizer_is_told_when_the_verdict_is_at_stake():
    text = opening(request(passed=True, verdict="not_met"))
    assert "# The verdict is at stake" in text
    assert "the video judge says `runs` not met" in text
    assert "Trust `trajectory` and the rollout passes" in text
    # Scores apart only: nothing to say about the verdict.
    assert "at stake" not in opening(request(passed=False, verdict="not_met"))
    assert "at stake" not in opening(request(passed=True, verdict="partly"))
