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

    def line(self) -> str:
        """'- speed: measured 0.62 m/s against at least 1.5 m/s, score 0.41', for agents and
        people: a score is never shown as if it were a measurement."""
        unit = f" {self.unit}" if self.unit else ""
        target = f"{DIRECTION_WORDS.get(self.direction, self.direction)} {self.target:g}{unit}"
        if not self.measured:
            return f"- {self.name}: score {self.score:.2f}, no measured value (target {target})"
        value = f"{self.value:g}{unit}"
        return f"- {self.name}: measured {value} against {target}, score {self.score:.2f}"


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
