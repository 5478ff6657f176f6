"""SessionWorkflow against the real dev server, with activities replaced by same-name stand-ins."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from tests.builders import start_session
from workflows import search
from workflows.contracts import keys as layout
from workflows.contracts.judging import (
    Criterion,
    JudgeCode,
    JudgeRequest,
    Judgment,
    VisualCriteria,
    VisualCriterion,
    VisualJudgment,
    VisualVerdict,
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
from workflows.contracts.queues import DEFAULT_QUEUE_PREFIX, task_queue
from workflows.contracts.session import SessionResult
from workflows.contracts.tools import (
    MAX_TOOL_CALLS,
    MAX_TOOL_ROUNDS,
    AskVideoRequest,
    ToolCallRef,
    ToolOutcome,
    ToolRequest,
)
from workflows.contracts.training import (
    EvalRequest,
    EvalResult,
    RewardArtifact,
    TrainBatchRequest,
    TrainBatchResult,
    TrainRequest,
    TrainResult,
    ValidateJudgeRequest,
    ValidateRequest,
    ValidateResult,
)
from workflows.contracts.usage import LLMCall
from workflows.session import SessionWorkflow


@dataclass
class Script:
    """What the stand-ins answer, and what they were asked."""

    scores: list[float]
    validate_error: str | None = None
    # LLM path: errors the first validations return, in order (then the code is valid).
    validate_errors: list[str] = field(default_factory=list)
    judge_errors: list[str] = field(default_factory=list)
    review_corrects: bool = False
    cost_per_call: float = 0.01
    # Scores by a fragment of the trajectory key ("iter_1/c0_lr_half"): runs judged in
    # parallel arrive in any order.
    run_scores: dict[str, float] = field(default_factory=dict)
    hang_from_iteration: int = 0  # train_policy hangs (until cancelled) from this iteration
    visual_score: float = 1.0  # what the stand-in VLM judge scores every video
    # Tool calls (name, arguments) the reviser makes in each round before it submits; then
    # the base and config it submits.
    reviser_tools: list[list[tuple[str, dict]]] = field(default_factory=list)
    revise_base: int | None = None
    revise_config: str | None = None
    # The synthesizer (judges disagree): its tool calls in round 0, then the score it settles.
    synth_tools: list[tuple[str, dict]] = field(default_factory=list)
    settle_score: float | None = None
    settle_trusted: str = "video"
    # The video judge / the synthesizer fail for good with this message (an outage, a refusal).
    vlm_error: str | None = None
    synth_error: str | None = None
    # The elicitor fails for good with this message (e.g. the LLM worker has no provider key).
    elicit_error: str | None = None
    # The reviser fails for good with this message (its provider stays down).
    revise_error: str | None = None
    # Code that passed validation and fails later, until the fixer has repaired it after
    # that failure (its key then carries ".fault"): training a reward (every reward, or only
    # batch members whose run name has `member_fault_run`), judging (from the n-th call on).
    train_fault: str | None = None
    member_fault_run: str = ""
    judge_fault: str | None = None
    judge_fault_from_call: int = 1
    train_fault_forever: bool = False  # every fix fails in training again
    # A run that trains but whose reward's sandbox answered its counts out of format.
    result_fault: str | None = None
    unmeasured: list[str] = field(default_factory=list)  # the author's unmeasured words
    calls: dict[str, list] = field(default_factory=dict)

    def log(self, name: str, req) -> None:
        self.calls.setdefault(name, []).append(req)

    def usage(self, agent: str, model: str) -> LLMCall | None:
        if model == "offline":
            return None
        return LLMCall(
            agent=agent,
            model=model,
            input_tokens=100,
            output_tokens=50,
            cost_usd=self.cost_per_call,
        )

    def activities(self) -> dict[str, list]:
        script = self

        @activity.defn(name="elicit_criteria")
        async def elicit_criteria(req: ElicitRequest) -> ElicitResult:
            script.log("elicit_criteria", req)
            if script.elicit_error:
                raise ApplicationError(script.elicit_error, non_retryable=True)
            return ElicitResult(
                criteria=CRITERIA,
                model_label="offline (no LLM)" if req.llm_model == "offline" else req.llm_model,
                usage=script.usage("elicitor", req.llm_model),
            )

        @activity.defn(name="author_reward")
        async def author_reward(req: AuthorRequest) -> AuthorResult:
            script.log("author_reward", req)
            reward = _reward(req.session_id, req.iteration, ctrl=0.1)
            if req.candidate:
                reward = reward.model_copy(update={"key": reward.key + f".c{req.candidate}"})
            return AuthorResult(
                reward=reward,
                criteria=CRITERIA,
                model_label="offline (no LLM)",
                usage=script.usage("reward_author", req.llm_model),
                unmeasured=script.unmeasured,
            )

        @activity.defn(name="author_judge")
        async def author_judge(req: JudgeAuthorRequest) -> JudgeCode:
            script.log("author_judge", req)
            return JudgeCode(
                key=layout.judge_key(req.session_id),
                summary="judge",
                usage=script.usage("judge_author", req.llm_model),
            )

        @activity.defn(name="review_reward")
        async def review_reward(req: ReviewRequest) -> ReviewResult:
            script.log("review_reward", req)
            usage = script.usage("reviewer", req.llm_model)
            if not script.review_corrects:
                return ReviewResult(lgtm=True, notes="LGTM", reward=req.reward, usage=usage)
            fixed = req.reward.model_copy(update={"key": req.reward.key + ".reviewed"})
            return ReviewResult(lgtm=False, notes="sign of ctrl", reward=fixed, usage=usage)

        @activity.defn(name="fix_code")
        async def fix_code(req: FixRequest) -> FixResult:
            script.log("fix_code", req)
            version = f"fault{req.series}_fix" if req.series else "fix"
            return FixResult(
                key=f"{req.code_key}.{version}{req.attempt}",
                usage=script.usage(f"fixer_{req.kind}", req.llm_model),
            )

        @activity.defn(name="vlm_criteria")
        async def vlm_criteria(req: VisualCriteriaRequest) -> VisualCriteria:
            script.log("vlm_criteria", req)
            return VisualCriteria(
                criteria=[VisualCriterion(name="moves", look_for="moves right")],
                usage=script.usage("vlm_criteria", req.llm_model),
            )

        @activity.defn(name="vlm_judge")
        async def vlm_judge(req: VlmJudgeRequest) -> VisualJudgment:
            script.log("vlm_judge", req)
            if script.vlm_error:
                raise ApplicationError(script.vlm_error, type="LLMRefused", non_retryable=True)
            verdict = "met" if script.visual_score == 1.0 else "not_met"
            return VisualJudgment(
                score=script.visual_score,
                verdicts=[
                    VisualVerdict(
                        name="moves", verdict=verdict, score=script.visual_score, reason="seen"
                    )
                ],
                shown="video",
                usage=script.usage("vlm_judge", req.llm_model),
            )

        @activity.defn(name="validate_judge")
        async def validate_judge(req: ValidateJudgeRequest) -> ValidateResult:
            script.log("validate_judge", req)
            n = len(script.calls["validate_judge"])
            if n <= len(script.judge_errors):
                return ValidateResult(ok=False, error=script.judge_errors[n - 1])
            return ValidateResult(ok=True, steps=req.steps)

        @activity.defn(name="revise_reward")
        async def revise_reward(req: ReviseRequest) -> ReviseResult:
            script.log("revise_reward", req)
            if script.revise_error:
                raise ApplicationError(
                    script.revise_error, type="LLMServerError", non_retryable=True
                )
            usage = script.usage("reviser", req.llm_model)
            folder = layout.revision_folder(req.session_id, req.iteration, req.candidate)
            if req.round < len(script.reviser_tools) and not req.final:
                calls = [
                    ToolCallRef(id=f"call_{req.round}_{i}", name=name, arguments=args)
                    for i, (name, args) in enumerate(script.reviser_tools[req.round])
                ]
                return ReviseResult(
                    done=False,
                    tool_calls=calls,
                    transcript_key=layout.turn_key(folder, req.round),
                    history_key=folder + "history.json",
                    usage=usage,
                )
            return ReviseResult(
                reward=_reward(
                    req.session_id, req.iteration, ctrl=req.reward.params.get("ctrl", 0.1) / 2
                ),
                timesteps=int(req.timesteps * 1.5),
                changes="halved the control cost weight",
                base_iteration=script.revise_base or req.iteration - 1,
                config=script.revise_config,
                usage=usage,
            )

        @activity.defn(name="session_tool")
        async def session_tool(req: ToolRequest) -> ToolOutcome:
            script.log("session_tool", req)
            return ToolOutcome(
                call_id=req.call.id, name=req.call.name, key=req.result_key, summary="looked"
            )

        @activity.defn(name="synthesize_judgment")
        async def synthesize_judgment(req: SynthesisRequest) -> SynthesisResult:
            script.log("synthesize_judgment", req)
            if script.synth_error:
                raise ApplicationError(script.synth_error, type="LLMAuthError", non_retryable=True)
            usage = script.usage("synthesizer", req.llm_model)
            if req.round == 0 and script.synth_tools:
                calls = [
                    ToolCallRef(id=f"s{i}", name=name, arguments=args)
                    for i, (name, args) in enumerate(script.synth_tools)
                ]
                return SynthesisResult(
                    done=False, tool_calls=calls, transcript_key=layout.turn_key(req.folder, 0),
                    usage=usage,
                )  # fmt: skip
            return SynthesisResult(
                score=script.settle_score,
                trusted=script.settle_trusted,
                diagnosis="it lies still",
                usage=usage,
            )

        @activity.defn(name="ask_video")
        async def ask_video(req: AskVideoRequest) -> ToolOutcome:
            script.log("ask_video", req)
            return ToolOutcome(
                call_id=req.call.id,
                name=req.call.name,
                key=req.result_key,
                summary="it lies still",
                usage=script.usage("video_question", req.llm_model),
            )

        @activity.defn(name="validate_reward")
        async def validate_reward(req: ValidateRequest) -> ValidateResult:
            script.log("validate_reward", req)
            if script.validate_error:
                return ValidateResult(ok=False, error=script.validate_error)
            n = len(script.calls["validate_reward"])
            if n <= len(script.validate_errors):
                return ValidateResult(ok=False, error=script.validate_errors[n - 1])
            return ValidateResult(ok=True, steps=req.steps, term_magnitudes={"forward": 0.1})

        @activity.defn(name="train_policy")
        async def train_policy(req: TrainRequest) -> TrainResult:
            script.log("train_policy", req)
            if script.hang_from_iteration and req.iteration >= script.hang_from_iteration:
                # Runs until cancelled (heartbeats carry the cancellation).
                try:
                    while True:
                        activity.heartbeat()
                        await asyncio.sleep(0.1)
                except asyncio.CancelledError:
                    script.log("train_cancelled", req)
                    raise
            fixed = ".fault" in req.reward_key and not script.train_fault_forever
            if script.train_fault and not fixed and not script.member_fault_run:
                raise ApplicationError(
                    script.train_fault, type="RewardRuntimeError", non_retryable=True
                )
            prefix = layout.run_prefix(req.session_id, req.iteration, req.run_name)
            return TrainResult(
                run_prefix=prefix,
                model_key=prefix + layout.MODEL,
                vecnormalize_key=prefix + layout.VECNORMALIZE,
                timesteps_done=req.timesteps,
                mean_episode_return=10.0,
                term_means={"forward": 1.0, "ctrl": -0.5},
                wall_seconds=60.0,
                fault=None if fixed else script.result_fault,
            )

        @activity.defn(name="train_batch")
        async def train_batch(req: TrainBatchRequest) -> TrainBatchResult:
            script.log("train_batch", req)
            results = []
            for i, m in enumerate(req.members):
                prefix = layout.run_prefix(req.session_id, req.iteration, m.run_name)
                results.append(
                    TrainResult(
                        run_prefix=prefix,
                        model_key=prefix + layout.MODEL,
                        vecnormalize_key=prefix + layout.VECNORMALIZE,
                        timesteps_done=req.timesteps,
                        mean_episode_return=10.0 + i,
                        term_means={"forward": 1.0, "ctrl": -0.5},
                        wall_seconds=60.0,
                        fault=script.train_fault
                        if script.member_fault_run and script.member_fault_run in m.run_name
                        else None,
                    )
                )
            return TrainBatchResult(results=results)

        @activity.defn(name="evaluate_policy")
        async def evaluate_policy(req: EvalRequest) -> EvalResult:
            script.log("evaluate_policy", req)
            return EvalResult(
                video_key=req.run_prefix + layout.VIDEO,
                trajectory_key=req.run_prefix + layout.TRAJECTORY,
                episode_return=1.0,
                env_return=1.0,
                episode_length=1000,
                terminated=False,
            )

        @activity.defn(name="judge_rollout")
        async def judge_rollout(req: JudgeRequest) -> Judgment:
            script.log("judge_rollout", req)
            n = len(script.calls["judge_rollout"])
            fixed = req.judge_key is not None and ".fault" in req.judge_key
            if script.judge_fault and n >= script.judge_fault_from_call and not fixed:
                raise ApplicationError(
                    f"judge code failed on {req.trajectory_key}: {script.judge_fault}",
                    type="JudgeCodeFailed",
                    non_retryable=True,
                )
            score = script.scores[min(len(script.calls["judge_rollout"]), len(script.scores)) - 1]
            for fragment, value in script.run_scores.items():
                if fragment in req.trajectory_key:
                    score = value
            passed = score >= req.pass_threshold
            return Judgment(
                score=score,
                passed=passed,
                diagnosis=f"scored {score}",
                failure_tags=[] if passed else ["too_slow"],
            )

        @activity.defn(name="record_lesson")
        async def record_lesson(req: LessonRequest) -> str:
            script.log("record_lesson", req)
            return f"lessons/{req.env_id}/stand-in.md"

        return {
            "llm": [
                elicit_criteria,
                author_reward,
                author_judge,
                review_reward,
                fix_code,
                revise_reward,
                vlm_criteria,
                vlm_judge,
                synthesize_judgment,
                ask_video,
            ],
            "train": [validate_reward, validate_judge, train_policy, train_batch, evaluate_policy],
            "judge": [judge_rollout, session_tool, record_lesson],
        }


CRITERIA = [Criterion(name="speed", description="fast", metric="mean_x_velocity", target=2.0)]


def _reward(session_id: str, iteration: int, ctrl: float) -> RewardArtifact:
    return RewardArtifact(
        key=layout.reward_key(session_id, iteration),
        latex=r"r = v_x - c \|a\|^2",
        terms=["forward", "ctrl"],
        summary="forward velocity minus control cost",
        template="forward",
        params={"ctrl": ctrl},
    )


@contextlib.asynccontextmanager
async def stand_in_workers(
    client: Client, script: Script, prefix: str = DEFAULT_QUEUE_PREFIX
) -> AsyncIterator[None]:
    """The three worker pools, with the script's stand-ins for the activities, for the block."""
    acts = script.activities()
    # Heartbeats leave within 0.2 s: an aborted session's training run learns of it quickly.
    fast = {"max_heartbeat_throttle_interval": timedelta(milliseconds=200)}
    async with (
        Worker(
            client,
            task_queue=task_queue("llm", prefix),
            workflows=[SessionWorkflow],
            activities=acts["llm"],
        ),
        Worker(client, task_queue=task_queue("train", prefix), activities=acts["train"], **fast),
        Worker(client, task_queue=task_queue("judge", prefix), activities=acts["judge"]),
    ):
        yield


@contextlib.asynccontextmanager
async def session(
    env: WorkflowEnvironment, prefix: str, script: Script, memo: dict | None = None, **overrides
) -> AsyncIterator[WorkflowHandle]:
    """A session started on the stand-ins; they answer (queries too) until the block ends."""
    inputs = {"prompt": "run forward", "env_id": "HalfCheetah-v5", "total_timesteps": 1000}
    async with stand_in_workers(env.client, script, prefix):
        yield await start_session(env.client, prefix, memo, **{**inputs, **overrides})


async def run_session(
    env: WorkflowEnvironment, prefix: str, script: Script, **overrides
) -> SessionResult:
    async with session(env, prefix, script, **overrides) as handle:
        return await handle.result()


async def test_failing_iteration_is_revised_then_passes(temporal_env, queue_prefix):
    script = Script(scores=[0.3, 0.9])
    result = await run_session(temporal_env, queue_prefix, script, max_iterations=3)

    assert result.passed and result.status == "passed"
    assert [r.score for r in result.iterations] == [0.3, 0.9]
    assert result.best_iteration == 2
    assert result.best.best_run.video_key.endswith("iter_2/c0_default_seed_0/videos/eval.mp4")
    # The reviser saw iteration 1's judgment and training, and its changes were applied.
    (revise,) = script.calls["revise_reward"]
    assert revise.judgment.score == 0.3 and revise.judgment.failure_tags == ["too_slow"]
    assert revise.train.term_means["ctrl"] == -0.5
    assert [t.timesteps for t in script.calls["train_policy"]] == [1000, 1500]
    assert result.iterations[1].changes == "halved the control cost weight"
    assert result.model_label == "offline (no LLM)"


async def test_budget_raise_is_capped_by_the_session(temporal_env, queue_prefix):
    script = Script(scores=[0.1, 0.1, 0.1])
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=3, max_timesteps_per_iteration=1200
    )
    assert not result.passed and result.status == "not_passed"
    assert [t.timesteps for t in script.calls["train_policy"]] == [1000, 1200, 1200]
    assert len(result.iterations) == 3


async def test_seeds_train_in_parallel_and_best_run_is_kept(temporal_env, queue_prefix):
    script = Script(scores=[0.5, 0.7, 0.6])
    result = await run_session(temporal_env, queue_prefix, script, max_iterations=1, seeds=3)
    assert sorted(t.seed for t in script.calls["train_policy"]) == [0, 1, 2]
    assert result.best_score == 0.7
    assert result.iterations[0].runs == 3


async def test_reward_that_does_not_run_fails_the_session_with_its_error(
    temporal_env, queue_prefix
):
    script = Script(
        scores=[1.0], validate_error="reward_fn.py line 4: NameError: name 'vx' is not defined"
    )
    with pytest.raises(WorkflowFailureError) as info:
        await run_session(temporal_env, queue_prefix, script)
    cause = info.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "RewardInvalid"
    assert "NameError: name 'vx' is not defined" in cause.message
    assert "train_policy" not in script.calls


async def test_a_failed_session_says_why_in_its_status(temporal_env, queue_prefix):
    """The reason is in the status (what `policyforge status` and the Web UI details show) and
    the stage search attribute, not only in the history's failure event."""
    script = Script(scores=[1.0], elicit_error="ANTHROPIC_API_KEY is not set on the LLM worker")
    async with session(temporal_env, queue_prefix, script, llm_model="claude-x") as handle:
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        status = await handle.query(SessionWorkflow.status)
        described = await handle.describe()
    assert status.stage == "failed"
    # Which agent failed, in which stage, and the provider's own words.
    assert status.note == (
        "failed: eliciting: the elicitor failed: ANTHROPIC_API_KEY is not set on the LLM worker"
    )
    assert described.typed_search_attributes[search.STAGE] == "failed"


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"env_id": "Cheetah-v9"}, "env_id"),
        ({"prompt": "  "}, "prompt"),
        ({"total_timesteps": 0}, "total_timesteps"),
        ({"max_iterations": -1}, "max_iterations"),
        ({"total_timesteps": "many"}, "total_timesteps"),
        ({"stepz": 5}, "stepz"),
    ],
)
async def test_bad_input_is_a_non_retryable_error_naming_the_field(
    temporal_env, queue_prefix, override, field
):
    with pytest.raises(WorkflowFailureError) as info:
        await run_session(temporal_env, queue_prefix, Script(scores=[1.0]), **override)
    cause = info.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "InvalidInput" and cause.non_retryable
    assert cause.message.startswith(f"{field}:")
    assert "\n" not in cause.message


async def test_history_holds_keys_and_short_text_only(temporal_env, queue_prefix):
    script = Script(scores=[0.2, 0.95])
    result = await run_session(temporal_env, queue_prefix, script, max_iterations=2)
    handle = temporal_env.client.get_workflow_handle(result.session_id)
    history = await handle.fetch_history()
    sizes = []
    for event in history.events:
        for attr in (
            "activity_task_scheduled_event_attributes",
            "activity_task_completed_event_attributes",
        ):
            if event.HasField(attr):
                payloads = getattr(event, attr)
                payloads = payloads.input if hasattr(payloads, "input") else payloads.result
                sizes.extend(len(p.data) for p in payloads.payloads)
    assert sizes and max(sizes) < 4096


# --- the LLM path (stand-ins answer as the LLM agents would) --------------------------------


async def test_llm_session_calls_agents_in_order_fixes_and_counts_tokens(
    temporal_env, queue_prefix
):
    script = Script(
        scores=[0.3, 0.9],
        validate_errors=["reward_fn.py line 3: NameError: name 'vx' is not defined"],
        judge_errors=["judge_fn.py line 9: KeyError: 'x_velocity'"],
        review_corrects=True,
    )
    result = await run_session(
        temporal_env,
        queue_prefix,
        script,
        max_iterations=3,
        llm_model="claude-sonnet-4-6",
        vlm_judge=False,
    )
    assert result.passed and [r.score for r in result.iterations] == [0.3, 0.9]
    llm_calls = [
        name
        for name in (
            "elicit_criteria",
            "author_reward",
            "author_judge",
            "review_reward",
            "fix_code",
            "revise_reward",
        )
        for _ in script.calls.get(name, [])
    ]
    # elicit, author, judge author, 2 reviews, 1 reward fix + 1 judge fix, 1 revision.
    assert sorted(llm_calls) == sorted(
        [
            "elicit_criteria",
            "author_reward",
            "author_judge",
            "review_reward",
            "review_reward",
            "fix_code",
            "fix_code",
            "revise_reward",
        ]
    )
    # The reviewed code is what got validated; after the error, the fix was validated.
    first, second = script.calls["validate_reward"][:2]
    assert first.reward_key.endswith(".reviewed")
    assert second.reward_key == first.reward_key + ".fix1"
    fixes = {f.kind: f for f in script.calls["fix_code"]}
    assert "NameError" in fixes["reward"].error and "KeyError" in fixes["judge"].error
    # The judge code (its fixed version) judged every run.
    assert {j.judge_key for j in script.calls["judge_rollout"]} == {
        f"sessions/{result.session_id}/judge_fn.py.fix1"
    }
    assert result.llm_usage.calls == 8
    assert result.llm_usage.input_tokens == 800 and result.llm_usage.output_tokens == 400
    assert result.llm_usage.cost_usd == pytest.approx(0.08)
    assert sum(r.llm_usage.calls for r in result.iterations) == 8
    assert result.iterations[0].review_notes == "sign of ctrl"
    assert result.training_seconds == 120.0


async def test_code_that_still_fails_after_five_attempts_quotes_the_last_error(
    temporal_env, queue_prefix
):
    errors = [f"reward_fn.py line 3: error number {i}" for i in range(1, 6)]
    script = Script(scores=[1.0], validate_errors=errors)
    with pytest.raises(WorkflowFailureError) as info:
        await run_session(temporal_env, queue_prefix, script, llm_model="gpt-5")
    cause = info.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "RewardInvalid"
    assert cause.non_retryable and "after 5 attempts" in cause.message
    assert "error number 5" in cause.message
    assert len(script.calls["fix_code"]) == 4
    assert "train_policy" not in script.calls


async def test_candidates_train_side_by_side_and_the_best_mean_wins(temporal_env, queue_prefix):
    # Runs are judged in start order: candidate 0 seeds (0.2, 0.4), candidate 1 (0.9, 0.5).
    script = Script(scores=[0.2, 0.4, 0.9, 0.5])
    result = await run_session(
        temporal_env,
        queue_prefix,
        script,
        max_iterations=1,
        candidates=2,
        seeds=2,
        pass_threshold=0.95,
        llm_model="gemini-2.5-pro",
    )
    # Each seed's two candidates train together: one train_batch per seed, no train_policy.
    assert "train_policy" not in script.calls
    batches = sorted(script.calls["train_batch"], key=lambda b: b.seed)
    assert [b.batch_name for b in batches] == ["batch_seed_0", "batch_seed_1"]
    assert [[m.run_name for m in b.members] for b in batches] == [
        ["c0_default_seed_0", "c1_default_seed_0"],
        ["c0_default_seed_1", "c1_default_seed_1"],
    ]
    assert len(script.calls["author_reward"]) == 2
    record = result.iterations[0]
    assert record.candidates == 2 and record.runs == 4 and record.batched
    # The record lists every run: its candidate, seed, training return and score.
    by_run = {(r.candidate, r.seed): r for r in record.run_results}
    assert set(by_run) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert by_run[(1, 0)].mean_return == 11.0 and by_run[(0, 0)].mean_return == 10.0
    assert len({r.score for r in record.run_results}) == 4
    winner = [r.score for r in record.run_results if r.candidate == record.candidate]
    assert record.score == max(winner)


async def test_llm_spend_cap_ends_the_session_keeping_the_best_policy(temporal_env, queue_prefix):
    # 0.01 per call: elicit + author + judge + review = 0.04 before training, then 0.05 with
    # the revision; a cap of 0.045 lets iteration 1 train and stops before iteration 2 trains.
    script = Script(scores=[0.3, 0.9], cost_per_call=0.01)
    result = await run_session(
        temporal_env,
        queue_prefix,
        script,
        max_iterations=3,
        llm_model="claude-sonnet-4-6",
        max_llm_cost_usd=0.045,
        vlm_judge=False,
    )
    assert result.status == "budget_exhausted" and not result.passed
    assert len(result.iterations) == 1 and result.best_iteration == 1
    assert result.best.best_run.model_key.endswith("iter_1/c0_default_seed_0/model.zip")
    assert "max_llm_cost_usd" in result.note
    assert len(script.calls["train_policy"]) == 1


async def test_training_time_cap_ends_the_session(temporal_env, queue_prefix):
    script = Script(scores=[0.1, 0.1, 0.1])
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=3, max_training_minutes=1.5
    )
    # Each stand-in run reports 60 s: the cap is reached after the second iteration.
    assert result.status == "budget_exhausted"
    assert len(result.iterations) == 2 and "max_training_minutes" in result.note
    # Each run was given its iteration's share of the time left to plan its steps from:
    # 90 s over 3 iterations, then the 30 s left over 2; its step count is then a ceiling.
    calls = script.calls["train_policy"]
    assert [c.max_seconds for c in calls] == [30.0, 15.0]
    assert len({c.timesteps for c in calls}) == 1 and calls[0].timesteps >= 20 * 1000


async def test_configs_fan_out_and_warm_start_begins_from_the_best_run(temporal_env, queue_prefix):
    script = Script(
        scores=[0.0],
        run_scores={
            "iter_1/c0_default": 0.2,
            "iter_1/c0_lr_half": 0.6,
            "iter_2/c0_default": 0.3,
            "iter_2/c0_lr_half": 0.9,
        },
    )
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=2, configs=2, warm_start=True
    )
    # Iteration 1 has nothing to start from: its two configs train together on the engine.
    [first] = script.calls["train_batch"]
    assert sorted(m.run_name for m in first.members) == ["c0_default_seed_0", "c0_lr_half_seed_0"]
    # Iteration 2 starts every run from iteration 1's best run (lr_half scored 0.6), each run
    # on its own (each loads the previous policy), and may still stop at a pass.
    second = script.calls["train_policy"]
    assert sorted(t.run_name for t in second) == ["c0_default_seed_0", "c0_lr_half_seed_0"]
    best_key = f"sessions/{result.session_id}/iter_1/c0_lr_half_seed_0/model.zip"
    assert {t.init_model_key for t in second} == {best_key}
    assert all(t.stop_at_pass is not None for t in second)
    assert result.iterations[0].config == "lr_half"
    assert result.passed and result.iterations[1].config == "lr_half"


def test_config_names_match_the_presets_variants():
    from activities.training.presets import VARIANTS, config_variants
    from workflows.contracts.training import CONFIG_NAMES

    assert ("default", *(name for name, _ in VARIANTS)) == CONFIG_NAMES
    variants = dict(config_variants("HalfCheetah-v5", len(CONFIG_NAMES)))
    assert variants["default"] == {}
    assert variants["lr_half"]["learning_rate"] == pytest.approx(5e-4)
    assert variants["lr_double"]["learning_rate"] == pytest.approx(2e-3)


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"algo": "sac", "configs": 2}, "configs"),
        ({"algo": "td3", "warm_start": True}, "warm_start"),
        ({"algo": "dqn"}, "algo"),
    ],
)
def test_off_policy_algorithms_reject_ppo_only_options(override, field):
    from workflows.contracts.session import input_errors

    errors = input_errors({"prompt": "run", "env_id": "Ant-v5", **override})
    assert errors and errors[0].startswith(f"{field}:")


async def test_algo_reaches_training_and_evaluation(temporal_env, queue_prefix):
    script = Script(scores=[0.9])
    await run_session(temporal_env, queue_prefix, script, max_iterations=1, algo="sac")
    assert script.calls["train_policy"][0].algo == "sac"
    assert script.calls["evaluate_policy"][0].algo == "sac"


async def test_the_video_judge_joins_the_code_judge(temporal_env, queue_prefix):
    # Trajectory scores 0.9 (passes alone); the video shows the criterion not met (0.0).
    script = Script(scores=[0.9, 0.9], visual_score=0.0)
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=2, llm_model="gemini-2.5-pro"
    )
    assert len(script.calls["vlm_criteria"]) == 1  # once per session
    assert len(script.calls["vlm_judge"]) == 2  # once per run
    first = result.iterations[0]
    assert first.score == pytest.approx(0.63) and not first.passed  # 0.7 * 0.9 + 0.3 * 0.0
    assert "visual_moves" in first.failure_tags and "judges_disagree" in first.failure_tags
    assert "Video: moves not_met: seen" in first.diagnosis
    assert script.calls["vlm_judge"][0].video_key.endswith("videos/eval.mp4")
    # 0.9 against 0.0: the synthesizer was asked, once per run, and settled nothing here.
    assert len(script.calls["synthesize_judgment"]) == 2
    # elicit, reward author, judge author, visual criteria, 2 reviews, 2 videos,
    # 2 syntheses, 1 revision
    assert result.llm_usage.calls == 11


async def test_the_reviser_looks_through_the_history_with_tools(temporal_env, queue_prefix):
    script = Script(
        scores=[0.3, 0.9],
        reviser_tools=[
            [("read_reward", {"iteration": 1}), ("read_judgment", {"iteration": 1})],
            [("trajectory_stats", {"iteration": 1, "fields": ["info_x_velocity"]})],
        ],
    )
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=2, llm_model="claude-sonnet-4-6",
        vlm_judge=False,
    )  # fmt: skip
    assert result.passed and len(result.iterations) == 2
    calls = script.calls["revise_reward"]
    # Two rounds of tools, then the answer: three calls, each one activity.
    assert [(c.round, c.final) for c in calls] == [(0, False), (1, False), (2, False)]
    assert [r.iteration for r in calls[0].history] == [1]
    assert calls[1].history == [] and calls[1].transcript_key.endswith("revision_c0/turn_0.json")
    keys = [o.key for o in calls[1].tool_outcomes]
    assert [k.rsplit("/", 1)[1] for k in keys] == ["tool_0_0.txt", "tool_0_1.txt"]
    tools = script.calls["session_tool"]
    folder = keys[0].rsplit("/", 1)[0]
    assert {t.history_key for t in tools} == {folder + "/history.json"}
    second = result.iterations[1]
    assert second.tools_used == [
        "read_reward(iteration=1)",
        "read_judgment(iteration=1)",
        "trajectory_stats(iteration=1, fields=['info_x_velocity'])",
    ]
    assert second.based_on == 1
    # Every call was counted: 4 before training, 3 for the revision, 1 review after it.
    assert result.llm_usage.calls == 8


async def test_the_reviser_must_submit_after_its_tool_rounds(temporal_env, queue_prefix):
    greedy = [("read_training", {"iteration": 1})] * (MAX_TOOL_CALLS + 2)
    script = Script(scores=[0.3, 0.9], reviser_tools=[greedy] * (MAX_TOOL_ROUNDS + 3))
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=2, llm_model="gpt-5.1",
        vlm_judge=False,
    )  # fmt: skip
    calls = script.calls["revise_reward"]
    assert len(calls) == MAX_TOOL_ROUNDS + 1 and calls[-1].final
    # Only MAX_TOOL_CALLS per round ran; the rest were answered without running.
    assert len(script.calls["session_tool"]) == MAX_TOOL_ROUNDS * MAX_TOOL_CALLS
    skipped = [o for o in calls[1].tool_outcomes if o.key is None]
    assert len(skipped) == 2 and all(o.is_error and "skipped" in o.summary for o in skipped)
    assert result.passed


async def test_revision_may_rebase_and_change_the_config(temporal_env, queue_prefix):
    # Iteration 2 does worse than 1: the third revision is offered iteration 1 as a base.
    script = Script(scores=[0.6, 0.3, 0.9], revise_base=1, revise_config="entropy")
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=3, llm_model="claude-sonnet-4-6",
        vlm_judge=False,
    )  # fmt: skip
    first_revision, second_revision = script.calls["revise_reward"]
    assert first_revision.best is None  # the last iteration was the best
    assert second_revision.best is not None and second_revision.best.iteration == 1
    assert second_revision.judgment.score == 0.3
    assert [r.based_on for r in result.iterations] == [None, 1, 1]
    trained = [(t.iteration, t.config, t.configs) for t in script.calls["train_policy"]]
    assert trained[0][:2] == (1, "default")
    assert trained[1] == (2, "entropy", 5) and trained[2][1] == "entropy"
    assert result.passed and result.iterations[2].config == "entropy"


async def test_the_synthesizer_settles_a_disagreement_with_tools(temporal_env, queue_prefix):
    script = Script(
        scores=[0.9],
        visual_score=0.0,
        synth_tools=[
            ("ask_video", {"question": "does it move?", "start_s": 0, "end_s": 2}),
            ("measure_window", {"fields": ["info_x_velocity"], "start_s": 0}),
        ],
        settle_score=0.2,
    )
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=1, llm_model="gemini-2.5-pro"
    )
    first, second = script.calls["synthesize_judgment"]
    assert first.code.score == 0.9 and first.visual.score == 0.0
    assert first.folder.endswith("iter_1/c0_default_seed_0/synthesis/")
    assert [o.summary for o in second.tool_outcomes] == ["it lies still", "looked"]
    asked = script.calls["ask_video"][0]
    assert asked.video_key.endswith("videos/eval.mp4") and asked.result_key.endswith("tool_0_0.txt")
    assert script.calls["session_tool"][0].trajectory_key.endswith("trajectories/eval.npz")
    record = result.iterations[0]
    # The settled 0.2 replaces the 70/30 mix (0.63); it stays between the judges' scores.
    assert record.score == pytest.approx(0.2) and not record.passed
    assert {"judges_disagree", "trusted_video"} <= set(record.failure_tags)
    assert "the synthesizer trusted video: it lies still" in record.diagnosis
    # elicit, author, judge author, visual criteria, review, video, 2 syntheses, 1 question
    assert result.llm_usage.calls == 9


async def test_the_video_judge_is_told_the_criteria_and_its_no_withholds_a_pass(
    temporal_env, queue_prefix
):
    # The code judge passes (0.9); the video says the visual criterion is not met; the
    # synthesizer, having looked, trusts the video: the pass is withheld.
    script = Script(scores=[0.9], visual_score=0.0, settle_score=0.7)
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=1, llm_model="gemini-2.5-pro"
    )
    (asked,) = script.calls["vlm_judge"]
    assert asked.measured == CRITERIA  # the elicited criteria, with their targets
    assert script.calls["vlm_criteria"][0].measured == CRITERIA
    (record,) = result.iterations
    assert not record.passed and record.score == pytest.approx(0.7)  # as it settled
    assert {"judges_disagree", "trusted_video", "visual_moves"} <= set(record.failure_tags)
    assert [c.line() for c in record.criteria if c.metric == "vlm"] == [
        "- visual:moves: the video judge says not met: seen"
    ]
    assert record.video_note is None
    await replays(temporal_env, result.session_id)


async def replays(env: WorkflowEnvironment, workflow_id: str) -> None:
    """The session's own history replays against the code (its patch markers included)."""
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    replayer = Replayer(workflows=[SessionWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)


async def test_the_synthesizer_trusting_the_trajectory_lets_the_pass_stand(
    temporal_env, queue_prefix
):
    script = Script(scores=[0.9], visual_score=0.0, settle_score=0.8, settle_trusted="trajectory")
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=1, llm_model="gemini-2.5-pro"
    )
    assert result.passed and result.iterations[0].score == pytest.approx(0.8)


async def test_a_video_judge_outage_leaves_the_run_judged_by_the_code_judge(
    temporal_env, queue_prefix
):
    script = Script(scores=[0.9], vlm_error="the model refused to watch the video")
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=1, llm_model="gemini-2.5-pro"
    )
    # The trained run is kept and the code judge's verdict stands, saying why it stood alone.
    assert result.passed and result.status == "passed"
    (record,) = result.iterations
    assert record.score == 0.9 and record.visual_score is None
    assert record.video_note == "video judge unavailable: the model refused to watch the video"
    assert "Video judge unavailable: the model refused to watch the video." in record.diagnosis
    assert "video_judge_unavailable" in record.failure_tags
    assert not script.calls.get("synthesize_judgment")
    await replays(temporal_env, result.session_id)


async def test_a_synthesizer_outage_keeps_the_run_and_fails_closed(temporal_env, queue_prefix):
    script = Script(scores=[0.9], visual_score=0.0, synth_error="invalid x-api-key")
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=1, llm_model="gemini-2.5-pro"
    )
    assert result.status == "not_passed" and result.best is not None
    (record,) = result.iterations
    # The video judge says no and nothing settled it: not passed, and it says why.
    assert not record.passed and record.video_note == "synthesizer unavailable: invalid x-api-key"
    assert "Not passed: nothing settled" in record.diagnosis
    await replays(temporal_env, result.session_id)


async def test_long_sessions_continue_as_new_between_iterations(temporal_env, queue_prefix):
    script = Script(scores=[0.3, 0.4, 0.9], reviser_tools=[[("read_reward", {"iteration": 1})]])
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=3, iterations_per_run=1,
        llm_model="claude-sonnet-4-6", vlm_judge=False,
    )  # fmt: skip
    # One session over three workflow runs: the result holds every iteration and all spend.
    assert result.passed and [r.iteration for r in result.iterations] == [1, 2, 3]
    assert len(script.calls["elicit_criteria"]) == 1 and len(script.calls["author_judge"]) == 1
    assert len(script.calls["validate_judge"]) == 1  # validated once, carried after
    # 4 before training; per revision 2 reviser calls and 1 review.
    assert result.llm_usage.calls == 4 + 2 * 3 and result.training_seconds == 180.0
    third = [c for c in script.calls["revise_reward"] if c.iteration == 3][0]
    assert [r.iteration for r in third.history] == [1, 2]
    assert third.judgment.score == 0.4 and third.best is None
    runs: list = []
    for _ in range(50):
        query = f"WorkflowId = '{result.session_id}'"
        runs = [w async for w in temporal_env.client.list_workflows(query)]
        if len(runs) == 3:
            break
        await asyncio.sleep(0.2)
    assert sorted(str(w.status.name) for w in runs) == [
        "COMPLETED", "CONTINUED_AS_NEW", "CONTINUED_AS_NEW"
    ]  # fmt: skip


ZERO_DIV = "reward_fn.py line 9: ZeroDivisionError: float division by zero"
LLM = {"llm_model": "claude-sonnet-4-6", "vlm_judge": False}  # a session with the fixer


async def test_a_reward_that_fails_in_training_goes_back_to_the_fixer_and_trains_again(
    temporal_env, queue_prefix
):
    script = Script(scores=[0.9], train_fault=ZERO_DIV)
    result = await run_session(temporal_env, queue_prefix, script, **LLM)
    assert result.passed
    (fix,) = script.calls["fix_code"]
    assert fix.kind == "reward" and fix.after_validation and fix.series == 1
    assert "ZeroDivisionError" in fix.error
    first, again = script.calls["train_policy"]
    assert again.reward_key == first.reward_key + ".fault1_fix1"
    # The fix was validated before it trained, and the record names the code that trained.
    assert script.calls["validate_reward"][-1].reward_key == again.reward_key
    assert result.iterations[0].reward_key == again.reward_key


async def test_a_judge_that_fails_on_a_later_episode_is_fixed_once_and_judges_every_run(
    temporal_env, queue_prefix
):
    script = Script(scores=[0.9], judge_fault="judge_fn.py line 4: IndexError: index 120")
    result = await run_session(temporal_env, queue_prefix, script, seeds=2, **LLM)
    assert result.passed and result.iterations[0].runs == 2
    (fix,) = script.calls["fix_code"]  # the two runs' failures share one fix
    assert fix.kind == "judge" and fix.after_validation and "IndexError" in fix.error
    fixed = fix.code_key + ".fault1_fix1"
    assert script.calls["validate_judge"][-1].judge_key == fixed
    judged = [j.judge_key for j in script.calls["judge_rollout"]]
    assert judged[-2:] == [fixed, fixed]


async def test_a_batch_member_whose_reward_fails_is_fixed_and_trained_alone(
    temporal_env, queue_prefix
):
    script = Script(scores=[0.9], train_fault=ZERO_DIV, member_fault_run="c1_")
    result = await run_session(temporal_env, queue_prefix, script, candidates=2, **LLM)
    assert result.passed and result.iterations[0].batched
    (fix,) = script.calls["fix_code"]
    assert fix.candidate == 1 and fix.after_validation
    (alone,) = script.calls["train_policy"]  # the other member's batch result stood
    assert alone.run_name.startswith("c1_") and alone.reward_key.endswith(".fault1_fix1")
    assert sorted(r.candidate for r in result.iterations[0].run_results) == [0, 1]


async def test_a_run_trained_with_a_fault_reported_at_its_end_goes_to_the_fixer(
    temporal_env, queue_prefix
):
    line = "reward_fn.py: the reward's sandbox answered out of format while counting its calls"
    script = Script(scores=[0.9], result_fault=line)
    result = await run_session(temporal_env, queue_prefix, script, **LLM)
    assert result.passed
    (fix,) = script.calls["fix_code"]
    assert fix.after_validation and "out of format" in fix.error
    first, again = script.calls["train_policy"]
    assert again.reward_key.endswith(".fault1_fix1")


async def test_code_failing_after_validation_ends_the_session_when_the_fixes_run_out(
    temporal_env, queue_prefix
):
    from workflows.step_code import MAX_CODE_FAULTS

    # Every fix fails in training again: the session gives up after MAX_CODE_FAULTS fixes,
    # quoting the error. The offline author has no fixer: its first failure ends the session.
    for model, fixes in (("claude-sonnet-4-6", MAX_CODE_FAULTS), ("offline", 0)):
        script = Script(scores=[0.9], train_fault=ZERO_DIV, train_fault_forever=True)
        with pytest.raises(WorkflowFailureError) as info:
            await run_session(temporal_env, queue_prefix, script, llm_model=model, vlm_judge=False)
        cause = info.value.cause
        while cause is not None and not isinstance(cause, ApplicationError):
            cause = cause.cause
        assert cause is not None and "ZeroDivisionError" in cause.message
        assert len(script.calls.get("fix_code", [])) == fixes
        assert len(script.calls["train_policy"]) == fixes + 1


async def test_words_the_author_could_not_measure_reach_the_result_and_the_status(
    temporal_env, queue_prefix
):
    script = Script(scores=[0.9], unmeasured=["gracefully", "with a relaxed stride"])
    result = await run_session(temporal_env, queue_prefix, script)
    assert result.passed and result.unmeasured == ["gracefully", "with a relaxed stride"]


async def test_a_reviser_that_stays_down_stops_the_session_with_its_best_kept(
    temporal_env, queue_prefix
):
    """A provider outage in a later stage never discards a trained, judged iteration: the
    session stops with its best policy and a line naming the agent, the stage and the error."""
    script = Script(scores=[0.4], revise_error="Anthropic is overloaded (HTTP 529)")
    async with session(temporal_env, queue_prefix, script, llm_model="claude-x") as handle:
        result = await handle.result()
    assert result.status == "stopped" and not result.passed
    assert result.note == (
        "stopped: revising: the reviser failed: Anthropic is overloaded (HTTP 529)"
    )
    assert [r.iteration for r in result.iterations] == [1] and result.best_iteration == 1
    assert result.best is not None and result.best.best_run.model_key
