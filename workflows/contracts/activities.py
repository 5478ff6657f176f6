"""Every activity's signature, declared once: its name, its pool, its request and its result.

The workflow calls an activity through its `ActivityRef` (see `workflows/steps.py`), and the
activity side declares what it implements with `@implements(REF)`. A type checker (mypy, run by
`make test`) then holds both sides to the same request and result types: a workflow that passes
a `ReviewRequest` where `fix_code` wants a `FixRequest`, or an activity whose result type
differs from its reference's, fails the check. `tests/workflows/test_activity_refs.py` checks at
run time that each reference is implemented once, on its pool, with the declared types.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar, overload

from temporalio import activity

from workflows.contracts.benchmark import BenchmarkStatus
from workflows.contracts.judging import (
    JudgeCode,
    JudgeRequest,
    Judgment,
    VisualCriteria,
    VisualJudgment,
)
from workflows.contracts.lessons import LessonRequest
from workflows.contracts.llm import (
    AuthorRequest,
    AuthorResult,
    ElicitRequest,
    ElicitResult,
    FixRequest,
    FixResult,
    JudgeAuthorRequest,
    ReviewRequest,
    ReviewResult,
    ReviseRequest,
    ReviseResult,
    SynthesisRequest,
    SynthesisResult,
    VisualCriteriaRequest,
    VlmJudgeRequest,
)
from workflows.contracts.tools import AskVideoRequest, ToolOutcome, ToolRequest
from workflows.contracts.training import (
    EvalRequest,
    EvalResult,
    TrainBatchRequest,
    TrainBatchResult,
    TrainRequest,
    TrainResult,
    ValidateJudgeRequest,
    ValidateRequest,
    ValidateResult,
)

Pool = Literal["llm", "train", "judge"]
# Invariant on purpose: a reference fixes its request and result types exactly.
Req = TypeVar("Req")
Res = TypeVar("Res")


@dataclass(frozen=True)
class ActivityRef(Generic[Req, Res]):
    """One activity: the name Temporal schedules, the pool whose queue serves it, the request
    it takes, the result it returns, and what it does in a few words (the Web UI's summary)."""

    name: str
    pool: Pool
    request: type[Req]
    result: type[Res]
    summary: str


class _Implements(Generic[Req, Res]):
    """The decorator `implements(REF)` returns: registers the function under REF's name and
    lets the type checker compare its signature with REF's."""

    def __init__(self, ref: ActivityRef[Req, Res]) -> None:
        self.ref = ref

    @overload
    def __call__(self, fn: Callable[[Req], Awaitable[Res]]) -> Callable[[Req], Awaitable[Res]]: ...

    @overload
    def __call__(self, fn: Callable[[Req], Res]) -> Callable[[Req], Res]: ...

    def __call__(self, fn: Callable[[Req], object]) -> Callable[[Req], object]:
        return activity.defn(name=self.ref.name)(fn)


def implements(ref: ActivityRef[Req, Res]) -> _Implements[Req, Res]:
    """`@implements(REVIEW_REWARD)` on the function that runs the activity (sync or async)."""
    return _Implements(ref)


# --- the llm pool ---------------------------------------------------------------------------
ELICIT_CRITERIA = ActivityRef(
    "elicit_criteria",
    "llm",
    ElicitRequest,
    ElicitResult,
    "turn the intent into measurable criteria",
)
AUTHOR_REWARD = ActivityRef(
    "author_reward", "llm", AuthorRequest, AuthorResult, "write reward code"
)
AUTHOR_JUDGE = ActivityRef(
    "author_judge", "llm", JudgeAuthorRequest, JudgeCode, "write the judge code"
)
REVIEW_REWARD = ActivityRef(
    "review_reward",
    "llm",
    ReviewRequest,
    ReviewResult,
    "review reward code for hacks and errors",
)
FIX_CODE = ActivityRef(
    "fix_code", "llm", FixRequest, FixResult, "fix code that failed on real env steps"
)
REVISE_REWARD = ActivityRef(
    "revise_reward",
    "llm",
    ReviseRequest,
    ReviseResult,
    "revise the reward from the judgment and the session's history",
)
VLM_CRITERIA = ActivityRef(
    "vlm_criteria",
    "llm",
    VisualCriteriaRequest,
    VisualCriteria,
    "derive visual criteria from the intent",
)
VLM_JUDGE = ActivityRef(
    "vlm_judge",
    "llm",
    VlmJudgeRequest,
    VisualJudgment,
    "watch the rollout's video and judge it",
)
SYNTHESIZE_JUDGMENT = ActivityRef(
    "synthesize_judgment",
    "llm",
    SynthesisRequest,
    SynthesisResult,
    "settle a disagreement between the trajectory and video judges",
)
ASK_VIDEO = ActivityRef(
    "ask_video", "llm", AskVideoRequest, ToolOutcome, "the synthesizer asks the video model"
)

# --- the train pool -------------------------------------------------------------------------
VALIDATE_REWARD = ActivityRef(
    "validate_reward",
    "train",
    ValidateRequest,
    ValidateResult,
    "validate on real env steps in the sandbox",
)
VALIDATE_JUDGE = ActivityRef(
    "validate_judge",
    "train",
    ValidateJudgeRequest,
    ValidateResult,
    "try the judge code on a random episode in the sandbox",
)
TRAIN_POLICY = ActivityRef(
    "train_policy", "train", TrainRequest, TrainResult, "train a policy on the reward"
)
TRAIN_BATCH = ActivityRef(
    "train_batch",
    "train",
    TrainBatchRequest,
    TrainBatchResult,
    "train reward candidates together, one process per batch shape",
)
EVALUATE_POLICY = ActivityRef(
    "evaluate_policy", "train", EvalRequest, EvalResult, "deterministic evaluation episode"
)

# --- the judge pool -------------------------------------------------------------------------
JUDGE_ROLLOUT = ActivityRef("judge_rollout", "judge", JudgeRequest, Judgment, "judge the rollout")
SESSION_TOOL = ActivityRef(
    "session_tool", "judge", ToolRequest, ToolOutcome, "an agent looks something up"
)
STORE_BENCHMARK = ActivityRef(
    "store_benchmark",
    "judge",
    BenchmarkStatus,
    str,
    "store the benchmark's result as JSON in S3",
)
RECORD_LESSON = ActivityRef(
    "record_lesson",
    "judge",
    LessonRequest,
    str,
    "distill what the session learnt into its lesson page",
)

ALL: tuple[ActivityRef, ...] = (
    ELICIT_CRITERIA,
    AUTHOR_REWARD,
    AUTHOR_JUDGE,
    REVIEW_REWARD,
    FIX_CODE,
    REVISE_REWARD,
    VLM_CRITERIA,
    VLM_JUDGE,
    SYNTHESIZE_JUDGMENT,
    ASK_VIDEO,
    VALIDATE_REWARD,
    VALIDATE_JUDGE,
    TRAIN_POLICY,
    TRAIN_BATCH,
    EVALUATE_POLICY,
    JUDGE_ROLLOUT,
    SESSION_TOOL,
    STORE_BENCHMARK,
    RECORD_LESSON,
)
