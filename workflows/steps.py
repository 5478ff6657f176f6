"""The activity calls of a session, one method per step, for `SessionWorkflow`.

Every call goes through an `ActivityRef` (workflows/contracts/activities.py), so the type checker
holds each request and result to the activity's declared types, while this module imports no
activity code (tests register stand-ins under the same names). Every LLM call's tokens and cost
go through `Accounting`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, Literal, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import activities as act
    from workflows.contracts import keys, timeouts
    from workflows.contracts.activities import ActivityRef
    from workflows.contracts.judging import Criterion, JudgeCode, JudgeRequest, Judgment
    from workflows.contracts.llm import (
        FixRequest,
        FixResult,
        ReviseRequest,
        ReviseResult,
        SynthesisRequest,
        SynthesisResult,
    )
    from workflows.contracts.queues import task_queue, train_queue
    from workflows.contracts.session import MAX_FIX_ATTEMPTS, RunRecord
    from workflows.contracts.tools import (
        MAX_TOOL_CALLS,
        MAX_TOOL_ROUNDS,
        SYNTH_TOOL_ROUNDS,
        AskVideoRequest,
        ToolCallRef,
        ToolOutcome,
        ToolRequest,
    )
    from workflows.contracts.training import (
        CONFIG_NAMES,
        BatchMemberRef,
        EvalRequest,
        EvalResult,
        RewardArtifact,
        StopAtPass,
        TrainBatchRequest,
        TrainBatchResult,
        TrainRequest,
        TrainResult,
        ValidateJudgeRequest,
        ValidateRequest,
        ValidateResult,
    )
    from workflows.contracts.usage import LLMCall
    from workflows.state import SessionState

Req = TypeVar("Req")
Res = TypeVar("Res")
Conversing = TypeVar("Conversing", ReviseRequest, SynthesisRequest)
Answer = TypeVar("Answer", ReviseResult, SynthesisResult)
Kind = Literal["reward", "judge"]

LLM_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(seconds=2))
TRAIN_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=5))
SHORT_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))
# train_policy also plays the final evaluation episode beside training (no evaluate_policy
# call): histories recorded before it replay without the marker.
TRAIN_EVAL_PATCH = "final-eval-beside-training"
# Generated code that fails after validation (a reward on states only a trained policy reaches,
# a judge on a later episode) goes back to the fixer instead of ending the session. Histories
# recorded before ended at such a failure, and still do.
CODE_FAULT_PATCH = "code-faults-to-fixer"
# A session that asks for a GPU or a CPU sends its train-pool work to that kind's queue.
# Sessions recorded before had no accelerator (any), never take this branch, and keep the
# shared queue; the marker guards the new commands all the same.
ACCELERATOR_PATCH = "accelerator-train-queue"
# A training call that fails or is cancelled (an abort) is charged the workflow time it ran
# (before, nothing: an aborted session reported 0 min of training after minutes of it).
FAILED_TRAINING_PATCH = "failed-training-charged"
# The activity errors that blame the code (non-retryable: running it again fails again).
FAULT_TYPES: dict[Kind, tuple[str, ...]] = {
    "reward": ("RewardRuntimeError",),
    "judge": ("JudgeCodeFailed",),
}
# Faults a session sends to the fixer in all (each costs a fix and a retrain or a re-judge).
MAX_CODE_FAULTS = 4


def failure_line(exc: BaseException) -> str:
    """The innermost cause's message, on one line: what failed, not where it surfaced."""
    while True:
        inner = getattr(exc, "cause", None) or exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(message.split())[:500]


def failed_usage(exc: ActivityError) -> LLMCall | None:
    """The calls an LLM activity made before it failed (an answer that could not be repaired,
    a refusal), from its error's details; None when it carries none."""
    cause = exc.cause
    if not isinstance(cause, ApplicationError) or not cause.details:
        return None
    try:
        return LLMCall.model_validate(cause.details[0])
    except ValueError:
        return None


def _still_invalid(
    kind: Kind, iteration: int, attempt: int, error: str, offline: bool
) -> ApplicationError:
    if kind == "judge":
        return ApplicationError(
            f"judge code is not accepted after {attempt} attempts: {error}",
            type="JudgeInvalid",
            non_retryable=True,
        )
    tries = "" if offline else f" after {attempt} attempts"
    return ApplicationError(
        f"reward code for iteration {iteration} does not run{tries}: {error}",
        type="RewardInvalid",
        non_retryable=True,
    )


def _with_fixes(reward: RewardArtifact, fixes: list[FixResult]) -> RewardArtifact:
    """The reward after the fixer's rounds: the last code, each description as last given."""
    for fixed in fixes:
        reward = reward.model_copy(
            update={
                "key": fixed.key,
                "latex": fixed.latex or reward.latex,
                "terms": fixed.terms or reward.terms,
                "summary": fixed.summary or reward.summary,
                "template": None,
                "params": {},
            }
        )
    return reward


class Steps:
    """The session's activity calls; each reads the session's input and state."""

    def __init__(self, state: SessionState) -> None:
        self.state = state
        # Shorthands for what every step reads.
        self.inp, self.session_id = state.inp, state.session_id
        self.offline, self.accounting = state.offline, state.accounting
        # Code that failed after validation, by its key: the fix every run of it waits for.
        self._refixes: dict[str, asyncio.Future[list[FixResult]]] = {}

    async def call(
        self,
        ref: ActivityRef[Req, Res],
        arg: Req,
        *,
        retry: RetryPolicy,
        summary: str | None = None,
        deadline: timeouts.Deadline | None = None,
    ) -> Res:
        """One activity on its pool's queue, typed by its reference, with its deadlines from
        the one table both sides read (workflows/contracts/timeouts.py)."""
        deadline = deadline or timeouts.for_activity(ref.name)
        queue, summary = self._queue(ref, summary or ref.summary)
        result: Res = await workflow.execute_activity(
            ref.name,
            arg,
            result_type=ref.result,
            task_queue=queue,
            summary=summary,
            start_to_close_timeout=deadline.start_to_close,
            heartbeat_timeout=deadline.heartbeat,
            retry_policy=retry,
        )
        return result

    async def _charged(
        self,
        ref: ActivityRef[Req, Res],
        arg: Req,
        *,
        retry: RetryPolicy,
        summary: str,
        deadline: timeouts.Deadline,
    ) -> Res:
        """A training call, its time charged to the session: the runs' own wall seconds when
        it returns, the workflow time it ran when it fails or is cancelled. While it runs, the
        status shows when it began (`training_since`)."""
        began = workflow.now()
        self.accounting.training_began(began)
        try:
            result = await self.call(ref, arg, retry=retry, summary=summary, deadline=deadline)
        except BaseException:
            ran = (workflow.now() - began).total_seconds()
            charged = ran if workflow.patched(FAILED_TRAINING_PATCH) else None
            self.accounting.training_ended(began, charged)
            raise
        self.accounting.training_ended(began, _wall_seconds(result))
        return result

    def _queue(self, ref: ActivityRef[Req, Res], summary: str) -> tuple[str, str]:
        """The activity's queue and its summary: the train pool's work of a session that asked
        for an accelerator goes to that kind's queue, and its summary says so (the Web UI shows
        it beside the activity, which waits there while no such worker polls)."""
        accelerator = self.inp.accelerator
        if ref.pool != "train" or accelerator == "any" or not workflow.patched(ACCELERATOR_PATCH):
            return task_queue(ref.pool, self.inp.queue_prefix), summary
        queue = train_queue(accelerator, self.inp.queue_prefix)
        return queue, f"{summary} (on a {accelerator.upper()} worker, queue {queue})"

    async def llm(self, ref: ActivityRef[Req, Res], arg: Req, summary: str | None = None) -> Res:
        """One LLM activity, started only when its likely cost fits under the session's cap
        (it is told what is left, for its repairs); every call it made is counted, those of
        an answer that failed too."""
        reserved = 0.0 if self.offline else self.accounting.before_call(ref.name)
        left = self.accounting.left_usd()
        if left is not None and hasattr(arg, "cost_left_usd"):
            arg = arg.model_copy(update={"cost_left_usd": round(left + reserved, 6)})  # type: ignore[attr-defined]
        try:
            result = await self.call(
                ref,
                arg,
                summary=summary or f"{ref.summary} ({self.inp.llm_model})",
                retry=LLM_RETRY,
            )
        except ActivityError as exc:
            self.accounting.llm(failed_usage(exc))
            raise
        finally:
            self.accounting.after_call(reserved)
        self.accounting.llm(getattr(result, "usage", None))
        return result

    # --- validate and fix --------------------------------------------------------------------

    async def valid_reward(
        self, iteration: int, candidate: int, reward: RewardArtifact, criteria: list[Criterion]
    ) -> RewardArtifact:
        """Validate on real env steps; on error the LLM fixes it, at most MAX_FIX_ATTEMPTS runs."""
        fixes = await self._until_valid(
            "reward", self._validate_reward, reward.key, iteration, candidate, criteria
        )
        return _with_fixes(reward, fixes)

    async def valid_judge(
        self, judge: JudgeCode, reward_key: str, criteria: list[Criterion]
    ) -> JudgeCode:
        """Validate the judge code on episodes that must not pass (random, zero actions, a fall,
        the opposite direction); when it fails one, or its values cannot be trusted, the LLM fixes
        it (bounded)."""
        fixes = await self._until_valid(
            "judge", self._judge_validator(reward_key, criteria), judge.key, 1, 0, criteria
        )
        return JudgeCode(key=fixes[-1].key, summary=judge.summary) if fixes else judge

    def _validate_reward(self, key: str) -> Awaitable[ValidateResult]:
        # A session whose runs cannot apply SHAPING refuses it here, where the fixer sees why.
        shaping = self.inp.runs_on_engine
        req = ValidateRequest(env_id=self.inp.env_id, reward_key=key, shaping=shaping)
        return self._validate(act.VALIDATE_REWARD, req)

    def _judge_validator(
        self, reward_key: str, criteria: list[Criterion]
    ) -> Callable[[str], Awaitable[ValidateResult]]:
        def validate(key: str) -> Awaitable[ValidateResult]:
            return self._validate(
                act.VALIDATE_JUDGE,
                ValidateJudgeRequest(
                    env_id=self.inp.env_id,
                    judge_key=key,
                    reward_key=reward_key,
                    criteria=[c.name for c in criteria],
                    specs=criteria,
                ),
            )

        return validate

    async def _validate(self, ref: ActivityRef[Req, ValidateResult], req: Req) -> ValidateResult:
        return await self.call(ref, req, retry=SHORT_RETRY)

    async def _until_valid(
        self,
        kind: Kind,
        validate: Callable[[str], Awaitable[ValidateResult]],
        key: str,
        iteration: int,
        candidate: int,
        criteria: list[Criterion],
        fault: str | None = None,
        series: int = 0,
    ) -> list[FixResult]:
        """Validate the code at `key`, and after each failure have the LLM fix it, until it runs
        or MAX_FIX_ATTEMPTS validations failed (then a non-retryable error quoting the last).
        With `fault` (the code failed after validation: the session's `series`-th such fault)
        the first round fixes that error."""
        fixes: list[FixResult] = []
        for attempt in range(1, MAX_FIX_ATTEMPTS + 1):
            if fault is not None and attempt == 1:
                error = fault
            else:
                self.state.stage("validating")
                check = await validate(key)
                if check.ok:
                    return fixes
                error = check.error or "unknown error"
            if self.offline or attempt == MAX_FIX_ATTEMPTS:
                raise _still_invalid(kind, iteration, attempt, error, self.offline)
            self.state.stage("fixing")
            request = self._fix_request(kind, iteration, candidate, key, error, attempt, criteria)
            # The first round of a fault: the code had passed validation.
            after = fault is not None and attempt == 1
            fixed = await self.llm(
                act.FIX_CODE,
                request.model_copy(update={"after_validation": after, "series": series}),
            )
            fixes.append(fixed)
            key = fixed.key
        raise AssertionError("unreachable")

    # --- code that fails after validation ------------------------------------------------------

    def code_fault(self, exc: ActivityError, kind: Kind) -> str | None:
        """The code's one-line error when `exc` blames the generated code and the session may
        still send it to the fixer; None when the caller should let `exc` end the session (not
        the code's fault, the offline author, the budget spent, a history from before)."""
        cause = exc.cause
        if not (
            isinstance(cause, ApplicationError)
            and cause.type in FAULT_TYPES[kind]
            and cause.non_retryable
        ):
            return None
        if self.offline or not workflow.patched(CODE_FAULT_PATCH):
            return None
        return cause.message if self._fix_budget_left() else None

    def member_fault(self, iteration: int, error: str) -> str:
        """A batch member's reward error (the batch trained on without it): returned when it
        may go to the fixer, else raised as the error that ends the session."""
        if self.offline or not self._fix_budget_left():
            raise ApplicationError(
                f"reward code for iteration {iteration} failed in training: {error}",
                type="RewardRuntimeError",
                non_retryable=True,
            )
        return error

    def _fix_budget_left(self) -> bool:
        return len(self._refixes) < MAX_CODE_FAULTS

    async def refix_reward(
        self, iteration: int, candidate: int, reward: RewardArtifact, error: str
    ) -> RewardArtifact:
        """A reward that failed in training, fixed and validated again; the runs of one
        candidate that fail on the same code share one fix."""
        fixes = await self._refix(
            reward.key,
            lambda series: self._until_valid(
                "reward",
                self._validate_reward,
                reward.key,
                iteration,
                candidate,
                self.state.criteria,
                fault=error,
                series=series,
            ),
        )
        return _with_fixes(reward, fixes)

    async def refix_judge(self, judge: JudgeCode, reward_key: str, error: str) -> JudgeCode:
        """The session's judge code that failed on an episode, fixed and validated again; it
        judges every later episode."""
        criteria = self.state.criteria
        fixes = await self._refix(
            judge.key,
            lambda series: self._until_valid(
                "judge",
                self._judge_validator(reward_key, criteria),
                judge.key,
                self.state.iteration,
                0,
                criteria,
                fault=error,
                series=series,
            ),
        )
        fixed = JudgeCode(key=fixes[-1].key, summary=judge.summary)
        if self.state.judge is not None and self.state.judge.key == judge.key:
            self.state.judge = fixed
        return fixed

    async def _refix(
        self, key: str, fix: Callable[[int], Awaitable[list[FixResult]]]
    ) -> list[FixResult]:
        """The fix of the code at `key`, started by the first run that needs it (its series
        number names the fixed files apart from earlier fixes)."""
        if key not in self._refixes:
            self._refixes[key] = asyncio.ensure_future(fix(len(self._refixes) + 1))
        return await self._refixes[key]

    def _fix_request(
        self,
        kind: Kind,
        iteration: int,
        candidate: int,
        key: str,
        error: str,
        attempt: int,
        criteria: list[Criterion],
    ) -> FixRequest:
        return FixRequest(
            session_id=self.session_id,
            iteration=iteration,
            candidate=candidate,
            kind=kind,
            prompt=self.inp.prompt,
            env_id=self.inp.env_id,
            llm_model=self.inp.llm_model,
            code_key=key,
            error=error,
            attempt=attempt,
            criteria=criteria,
        )

    # --- agents with tools -------------------------------------------------------------------

    async def revise(self, req: ReviseRequest) -> tuple[ReviseResult, list[str]]:
        """The reviser's calls, running the tools it asks for in between (at most
        MAX_TOOL_ROUNDS rounds, then it must submit); the revision and the tools it used."""

        async def tools(result: ReviseResult, round_: int) -> list[ToolOutcome]:
            assert result.transcript_key is not None
            return await self.run_tools(
                "reviser",
                result.tool_calls,
                result.transcript_key,
                round_,
                history_key=result.history_key,
            )

        # The history goes with the first call only; the activity keeps it in S3.
        return await self._converse(act.REVISE_REWARD, req, MAX_TOOL_ROUNDS, tools, {"history": []})

    async def settle(self, req: SynthesisRequest) -> SynthesisResult:
        """The synthesizer's calls when the judges disagree, with its tools in between (at most
        SYNTH_TOOL_ROUNDS rounds)."""

        async def ask_video(call: ToolCallRef, key: str) -> ToolOutcome:
            return await self.llm(
                act.ASK_VIDEO,
                AskVideoRequest(
                    prompt=self.inp.prompt,
                    llm_model=self.inp.llm_model,
                    video_key=req.video_key,
                    call=call,
                    result_key=key,
                ),
                summary=f"synthesizer asks the video model: {call.label()}",
            )

        async def tools(result: SynthesisResult, round_: int) -> list[ToolOutcome]:
            assert result.transcript_key is not None
            return await self.run_tools(
                "synthesizer",
                result.tool_calls,
                result.transcript_key,
                round_,
                trajectory_key=req.trajectory_key,
                ask_video=ask_video,
            )

        settled, _ = await self._converse(
            act.SYNTHESIZE_JUDGMENT, req, SYNTH_TOOL_ROUNDS, tools, {}
        )
        return settled

    async def _converse(
        self,
        ref: ActivityRef[Conversing, Answer],
        req: Conversing,
        rounds: int,
        tools: Callable[[Answer, int], Awaitable[list[ToolOutcome]]],
        after_first: dict[str, Any],
    ) -> tuple[Answer, list[str]]:
        """An agent's LLM calls, one activity each, with the tools it asked for run in between;
        the last call may only submit. Its answer and the tool calls it made."""
        used: list[str] = []
        for round_ in range(rounds + 1):
            call = req.model_copy(update={"round": round_, "final": round_ == rounds})
            result = await self.llm(ref, call)
            if result.done:
                return result, used
            used += [c.label() for c in result.tool_calls]
            outcomes = await tools(result, round_)
            req = req.model_copy(
                update={
                    "transcript_key": result.transcript_key,
                    "tool_outcomes": outcomes,
                    **after_first,
                }
            )
        raise AssertionError("unreachable: the final call offers only the submit tool")

    async def run_tools(
        self,
        agent: str,
        calls: list[ToolCallRef],
        transcript_key: str,
        round_: int,
        *,
        history_key: str | None = None,
        trajectory_key: str | None = None,
        ask_video: Callable[[ToolCallRef, str], Awaitable[ToolOutcome]] | None = None,
    ) -> list[ToolOutcome]:
        """One round of an agent's tool calls, in parallel; each answer lands next to the
        conversation in S3. Calls beyond MAX_TOOL_CALLS are answered without running."""
        folder = keys.folder_of(transcript_key)

        async def one(i: int, call: ToolCallRef) -> ToolOutcome:
            if i >= MAX_TOOL_CALLS:
                return ToolOutcome(
                    call_id=call.id,
                    name=call.name,
                    is_error=True,
                    summary=f"skipped: at most {MAX_TOOL_CALLS} tool calls per round",
                )
            key = keys.tool_result_key(folder, round_, i)
            if call.name == "ask_video" and ask_video is not None:
                return await ask_video(call, key)
            return await self.call(
                act.SESSION_TOOL,
                ToolRequest(
                    session_id=self.session_id,
                    env_id=self.inp.env_id,
                    call=call,
                    result_key=key,
                    history_key=history_key,
                    trajectory_key=trajectory_key,
                ),
                summary=f"{agent} looks up {call.label()}",
                retry=SHORT_RETRY,
            )

        return list(await asyncio.gather(*(one(i, c) for i, c in enumerate(calls))))

    # --- train, evaluate, judge --------------------------------------------------------------

    async def train(
        self,
        iteration: int,
        run_name: str,
        reward: RewardArtifact,
        timesteps: int,
        seed: int,
        config: str,
        init: RunRecord | None,
    ) -> TrainResult:
        # Only the engine plans its steps from time (PPO without a warm start).
        timesteps, seconds, budget = self._timed(iteration, timesteps, self.inp.algo == "ppo")
        trained = await self._charged(
            act.TRAIN_POLICY,
            TrainRequest(
                session_id=self.session_id,
                iteration=iteration,
                run_name=run_name,
                env_id=self.inp.env_id,
                reward_key=reward.key,
                timesteps=timesteps,
                seed=seed,
                config=config,
                # Enough variants that a config the reviser chose is among them.
                configs=max(self.inp.configs, CONFIG_NAMES.index(config) + 1),
                algo=self.inp.algo,
                eval_max_steps=self.inp.eval_max_steps,
                init_model_key=init.model_key if init else None,
                init_vecnormalize_key=init.vecnormalize_key if init else None,
                final_eval=workflow.patched(TRAIN_EVAL_PATCH),
                stop_at_pass=self._stop_at_pass(),
                max_seconds=seconds,
            ),
            summary=f"train {run_name}: {budget} steps of {self.inp.algo.upper()}",
            # A dead worker is noticed within the heartbeat timeout; the retry resumes from
            # the checkpoint in the last heartbeat.
            deadline=timeouts.train(timesteps),
            retry=TRAIN_RETRY,
        )
        return trained

    def _timed(self, iteration: int, timesteps: int, engine: bool) -> tuple[int, float | None, str]:
        """With max_training_minutes, a run on the engine plans its steps from its share of
        the time left, up to the timed cap: (steps at most, seconds or None, how to say it)."""
        seconds = self.accounting.training_seconds_for(iteration) if engine else None
        if seconds is None:
            return timesteps, None, f"{timesteps:,}"
        cap = max(timesteps, self.inp.timed_timesteps_cap)
        return cap, seconds, f"{seconds / 60:.1f} min, at most {cap:,}"

    def _stop_at_pass(self) -> StopAtPass | None:
        """How a run may stop before its budget: its checkpoints judged as the session judges
        (None when the session trains every step)."""
        share = self.inp.min_training_share or 0.0
        if share >= 1.0 or not self.state.criteria:
            return None
        return StopAtPass(
            criteria=self.state.criteria,
            pass_threshold=self.inp.pass_threshold,
            judge_key=self.state.judge.key if self.state.judge else None,
            min_share=share,
            min_steps=self.inp.min_training_steps,
        )

    async def train_batch(
        self, iteration: int, members: list[BatchMemberRef], timesteps: int, seed: int
    ) -> list[TrainResult]:
        """An iteration's runs of one seed trained together (train_batch); their results in
        the members' order."""
        configs = max(self.inp.configs, *(CONFIG_NAMES.index(m.config) + 1 for m in members))
        timesteps, seconds, budget = self._timed(iteration, timesteps, True)
        batch = await self._charged(
            act.TRAIN_BATCH,
            TrainBatchRequest(
                session_id=self.session_id,
                iteration=iteration,
                batch_name=keys.batch_name(seed),
                env_id=self.inp.env_id,
                members=members,
                timesteps=timesteps,
                seed=seed,
                configs=configs,
                eval_max_steps=self.inp.eval_max_steps,
                max_seconds=seconds,
            ),
            summary=f"train {len(members)} runs of seed {seed} together: {budget} steps each",
            # The heartbeat notices a dead worker; the retry resumes every group's checkpoint.
            deadline=timeouts.train(timesteps * len(members)),
            retry=TRAIN_RETRY,
        )
        return batch.results

    async def evaluate(self, reward: RewardArtifact, trained: TrainResult, seed: int) -> EvalResult:
        """The run's deterministic evaluation episode: the one train_policy played beside
        training when it was asked to, else an evaluate_policy call."""
        if trained.final_eval is not None:
            return trained.final_eval
        return await self.call(
            act.EVALUATE_POLICY,
            EvalRequest(
                env_id=self.inp.env_id,
                reward_key=reward.key,
                run_prefix=trained.run_prefix,
                model_key=trained.model_key,
                vecnormalize_key=trained.vecnormalize_key,
                seed=seed,
                max_steps=self.inp.eval_max_steps,
                algo=self.inp.algo,
            ),
            summary=f"deterministic evaluation episode of {trained.run_prefix.split('/')[-2]}",
            retry=TRAIN_RETRY,
        )

    async def judge(
        self, evaluated: EvalResult, criteria: list[Criterion], judge: JudgeCode | None
    ) -> Judgment:
        return await self.call(
            act.JUDGE_ROLLOUT,
            JudgeRequest(
                env_id=self.inp.env_id,
                trajectory_key=evaluated.trajectory_key,
                criteria=criteria,
                pass_threshold=self.inp.pass_threshold,
                judge_key=judge.key if judge else None,
            ),
            summary="judge the rollout with "
            + ("the session's judge code" if judge else "metrics"),
            retry=SHORT_RETRY,
        )


def _wall_seconds(result: Any) -> float:
    """A training call's wall seconds: a run's own, or a batch's mean over its runs (they
    trained together, at once)."""
    if isinstance(result, TrainBatchResult):
        walls = [r.wall_seconds for r in result.results]
        return sum(walls) / len(walls) if walls else 0.0
    return float(result.wall_seconds)
