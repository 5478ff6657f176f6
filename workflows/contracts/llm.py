"""LLM-pool contracts: the requests and results of the agents' activities.

One activity is one LLM call: eliciting criteria, authoring reward and judge code, reviewing
and fixing it, writing visual criteria and watching a video, settling a disagreement between
the judges, revising a reward. Each request derives its session, prompt, model (and env) from
`context`; each result that called a model carries its `LLMCall`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from workflows.contracts.context import Contract, PromptContext, SessionContext
from workflows.contracts.judging import Criterion, Judgment, VisualCriterion, VisualJudgment
from workflows.contracts.session import IterationEvidence, IterationRecord
from workflows.contracts.tools import ToolCallRef, ToolOutcome
from workflows.contracts.training import RewardArtifact, TrainResult
from workflows.contracts.usage import LLMCall


class ElicitRequest(SessionContext):
    """What elicit_criteria takes: asks for the behaviour's measurable criteria, once per
    session, with the training they must be reachable in (0: not told, as older histories)."""

    timesteps: int = 0  # the first iteration's steps per run
    algo: str = "ppo"
    max_iterations: int = 0


class ElicitResult(Contract):
    """What elicit_criteria returns: the criteria, and the label of the model that wrote them."""

    criteria: list[Criterion]
    model_label: str
    usage: LLMCall | None = None


class AuthorRequest(SessionContext):
    """What author_reward takes: the iteration, the criteria, and which candidate to write."""

    iteration: int
    criteria: list[Criterion] = Field(default_factory=list)
    candidate: int = 0
    candidates: int = 1


class AuthorResult(Contract):
    """What author_reward returns: the reward (code in S3) and the criteria (the offline
    author's own, else the request's)."""

    reward: RewardArtifact
    criteria: list[Criterion]
    model_label: str
    usage: LLMCall | None = None
    # The budget per run that a lesson's passing session trained with (None: no lesson).
    timesteps: int | None = None
    # Words of the intent the author could not measure (style: "gracefully"): not refused,
    # but a result says it was only partly expressed.
    unmeasured: list[str] = Field(default_factory=list)


class JudgeAuthorRequest(SessionContext):
    """What author_judge takes: the criteria the session's judge code is to measure."""

    criteria: list[Criterion]


class ReviewRequest(SessionContext):
    """What review_reward takes: one reward candidate, checked for hacks and errors before
    training."""

    iteration: int
    candidate: int
    reward: RewardArtifact
    criteria: list[Criterion]


class ReviewResult(Contract):
    """What review_reward returns: LGTM or not, the reviewer's notes, and the reward to train."""

    lgtm: bool
    notes: str  # what the reviewer found, one or two sentences
    reward: RewardArtifact  # the corrected reward when not LGTM, else the one reviewed
    usage: LLMCall | None = None


class FixRequest(SessionContext):
    """What fix_code takes: reward or judge code that failed on real env steps, and the error."""

    iteration: int
    candidate: int
    kind: Literal["reward", "judge"]
    code_key: str
    error: str
    attempt: int  # the attempt that failed (1-based)
    criteria: list[Criterion] = Field(default_factory=list)
    # The code passed validation and failed later (in training, or judging an episode): on
    # states that random steps did not reach.
    after_validation: bool = False
    # 0: a fix during validation; n: the fixes of the session's n-th such later failure.
    series: int = 0


class FixResult(Contract):
    """What fix_code returns: the fixed code's S3 key and, for a reward, its new description."""

    key: str
    latex: str = ""
    terms: list[str] = Field(default_factory=list)
    summary: str = ""
    usage: LLMCall | None = None


# --- the video judge ----------------------------------------------------------------------------


class VisualCriteriaRequest(PromptContext):
    """What vlm_criteria takes: asks what someone watching the rollouts' videos should
    check, once per session."""

    # The robot and camera the criteria are written for ("": unknown, as in older histories).
    env_id: str = ""
    # The session's elicited criteria, which the trajectory judge measures ([]: not told, as
    # in older histories): the visual criteria look for what those numbers cannot show.
    measured: list[Criterion] = Field(default_factory=list)


class VlmJudgeRequest(PromptContext):
    """What vlm_judge takes: the rollout's video, the visual criteria to judge it by, and the
    criteria the trajectory judge measures (with their targets), which what it sees should be
    consistent with."""

    video_key: str
    criteria: list[VisualCriterion]
    # The session's elicited criteria: comparison, target, tolerance and unit ([]: not told,
    # as in histories recorded before).
    measured: list[Criterion] = Field(default_factory=list)
    # For models that take images but not video: a floor; they see at least 16, about one a
    # second of the episode (activities/llm/frames.py).
    frames: int = 8
    env_id: str = ""  # the robot and camera the judge is told about ("": not told)


class SynthesisRequest(SessionContext):
    """The trajectory judge and the video judge disagree about one rollout: settle it."""

    code: Judgment
    visual: VisualJudgment
    visual_criteria: list[VisualCriterion]
    video_key: str
    trajectory_key: str
    folder: str  # where the conversation and tool answers go (<run_prefix>synthesis/)
    transcript_key: str | None = None
    tool_outcomes: list[ToolOutcome] = Field(default_factory=list)
    round: int = 0
    final: bool = False


class SynthesisResult(Contract):
    """What synthesize_judgment returns: the settled score and which judge it trusted, or
    (not done) the tools the synthesizer asked for."""

    done: bool = True
    score: float | None = None  # the settled intent score (kept between the two judges')
    # When the judges disagree on the verdict (every criterion measured met, a visual one not
    # met): "trajectory" lets the pass stand, "video" withholds it, "both" settles nothing
    # and the rollout does not pass (workflows/synthesis.py).
    trusted: Literal["trajectory", "video", "both"] = "both"
    diagnosis: str = ""
    tool_calls: list[ToolCallRef] = Field(default_factory=list)
    transcript_key: str | None = None
    usage: LLMCall | None = None


# --- the reviser --------------------------------------------------------------------------------


class ReviseRequest(SessionContext):
    """What revise_reward takes: the last iteration's reward, judgment and training, the
    session's history and feedback, and the outcomes of the tools the reviser asked for."""

    iteration: int  # the iteration the revised reward is for
    reward: RewardArtifact  # the last iteration's winning reward, its judgment and training
    criteria: list[Criterion]
    judgment: Judgment
    train: TrainResult
    timesteps: int
    timesteps_cap: int
    candidate: int = 0
    candidates: int = 1
    # What people said since the last revision (give_feedback / feedback signal).
    feedback: list[str] = Field(default_factory=list)
    # Every iteration so far, and the best one when it is not the last (a base to rebase on).
    history: list[IterationRecord] = Field(default_factory=list)
    best: IterationEvidence | None = None
    algo: str = "ppo"
    # The conversation so far (None: the first call) and the results of the tools it asked for.
    transcript_key: str | None = None
    tool_outcomes: list[ToolOutcome] = Field(default_factory=list)
    round: int = 0
    final: bool = False  # no more tools: the model must submit


class ReviseResult(Contract):
    """What revise_reward returns: the revised reward for the next iteration, or the tools
    the reviser asked for."""

    # done: the revision below; not done: the tools the model asked for, to run and answer.
    done: bool = True
    reward: RewardArtifact | None = None
    timesteps: int = 0
    changes: str = ""  # one or two sentences: what changed and why
    diagnosis: str = ""
    base_iteration: int | None = None  # the iteration whose reward this one revises
    config: str | None = None  # the hyperparameter config asked for next (PPO)
    tool_calls: list[ToolCallRef] = Field(default_factory=list)
    transcript_key: str | None = None
    history_key: str | None = None  # what the tools read the session's iterations from
    usage: LLMCall | None = None
