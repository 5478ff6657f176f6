"""Judging contracts: the criteria a behaviour is judged by, the judge's code, the requests to
judge a rollout, and the judgments (from the trajectory and from the video).

The code judge (or the LLM-written judge code) scores a rollout's trajectory against the
criteria; a vision-language judge watches its video against the visual criteria; the workflow
settles the two (workflows/synthesis.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from workflows.contracts.context import Contract
from workflows.contracts.usage import LLMCall


class Criterion(Contract):
    """A measurable behavioural criterion, checked by the code judge on a trajectory."""

    name: str
    description: str
    # A metric the code judge computes from a trajectory (see activities/judging/metrics.py);
    # None for criteria an LLM elicited, which its judge code measures.
    metric: str | None = None
    # How to measure it from a trajectory, in words (what the judge code computes).
    measure: str = ""
    target: float
    # at_least: value >= target passes; at_most: value <= target; near: |value-target| <= tol.
    direction: Literal["at_least", "at_most", "near"] = "at_least"
    tolerance: float = 0.0
    weight: float = 1.0
    unit: str = ""  # of the measured value and the target ("m/s", "m", "rad"; "" if none)
    # "As fast / high / far as possible": the target is the least that passes, and training
    # goes on past it while the measured value still improves (stop at pass waits for a
    # plateau; see activities/training/stop_at_pass.py).
    maximise: bool = False


class JudgeCode(Contract):
    """What author_judge returns: the judge code an LLM wrote (in S3) and what it measures."""

    key: str  # sessions/<sid>/judge_fn.py
    summary: str
    usage: LLMCall | None = None


class JudgeRequest(Contract):
    """What judge_rollout takes: a rollout's trajectory, the criteria and the pass threshold."""

    env_id: str
    trajectory_key: str
    criteria: list[Criterion]
    pass_threshold: float
    # LLM-written judge code (run in a child process); None: the built-in code judge.
    judge_key: str | None = None


DIRECTION_WORDS = {"at_least": "at least", "at_most": "at most", "near": "near"}


class CriterionScore(Contract):
    """One criterion measured on a trajectory: its value against the target, and its score."""

    name: str
    metric: str
    value: float
    target: float
    direction: str
    score: float  # in [0, 1]
    # False: judge code gave this criterion a 0-1 score but no physical value (`value` is
    # then the score, and `target` the criterion's own).
    measured: bool = True
    unit: str = ""
    # Decided by the trusted side (workflows/verdict.py) from the measured value; None in
    # judgments recorded before verdicts were computed.
    met: bool | None = None
    tolerance: float = 0.0  # of a "near" criterion
    label: str = ""  # how people read it ("mean forward velocity"); "" shows the name
    # The video judge's verdict on a visual criterion (metric "vlm"): met, partly or not_met,
    # and why. A verdict, never a measurement.
    verdict: str = ""
    reason: str = ""

    def line(self) -> str:
        """'- speed: measured 0.62 m/s against at least 1.5 m/s: not met (score 0.41)', for
        agents and people: a score is never shown as if it were a measurement, and a video
        verdict never as a measured value."""
        if self.metric == "vlm":
            said = (self.verdict or "not judged").replace("_", " ")
            why = f": {self.reason}" if self.reason else ""
            return f"- {self.name}: the video judge says {said}{why}"
        unit = f" {self.unit}" if self.unit else ""
        target = f"{DIRECTION_WORDS.get(self.direction, self.direction)} {self.target:g}{unit}"
        if self.direction == "near" and self.tolerance:
            target += f" ± {self.tolerance:g}{unit}"
        if not self.measured:
            return f"- {self.name}: not measured (target {target}): not met"
        value = f"{self.value:g}{unit}"
        met = self.met if self.met is not None else self.score >= 1.0
        word = "met" if met else f"not met (score {self.score:.2f})"
        return f"- {self.name}: measured {value} against {target}: {word}"


class Judgment(Contract):
    """What judge_rollout returns: the rollout's score, whether it passed, why, and each
    criterion's score (the video judge's merged in by workflows/synthesis.py)."""

    score: float  # in [0, 1]
    passed: bool
    diagnosis: str
    criteria: list[CriterionScore] = Field(default_factory=list)
    failure_tags: list[str] = Field(default_factory=list)
    # Set when a VLM judge also watched the video (see workflows/synthesis.py).
    code_score: float | None = None
    visual_score: float | None = None
    # The same judge on the run's evaluation checkpoints: percent of training -> mean score of
    # its p10/median/p90 episodes (how the behaviour developed).
    checkpoints: dict[str, float] = Field(default_factory=dict)
    # At each checkpoint, the mean measured value per criterion over its episodes.
    checkpoint_measured: dict[str, dict[str, float]] = Field(default_factory=dict)
    # "video judge unavailable: <why>" (its call failed after its retries: the code judge's
    # verdict stands alone), or "synthesizer unavailable: <why>"; None when all answered.
    video_note: str | None = None


# --- the video judge --------------------------------------------------------------------------


class VisualCriterion(Contract):
    """A criterion someone watching a rollout's video can check, for the video judge."""

    name: str
    look_for: str  # what someone watching the video checks


class VisualCriteria(Contract):
    """What vlm_criteria returns: the visual criteria, derived once per session from the intent."""

    criteria: list[VisualCriterion]
    usage: LLMCall | None = None


class VisualVerdict(Contract):
    """The video judge's verdict on one visual criterion, with its score and reason."""

    name: str
    verdict: Literal["met", "partly", "not_met"]
    score: float
    reason: str


class VisualJudgment(Contract):
    """What vlm_judge returns: its verdict on each visual criterion after watching the video."""

    score: float  # mean of the verdicts' scores (met 1, partly 0.5, not met 0)
    verdicts: list[VisualVerdict]
    shown: str  # "video" or "<n> frames"
    usage: LLMCall | None = None
