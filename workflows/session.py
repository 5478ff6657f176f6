"""SessionWorkflow: one prompt-to-policy session.

elicit criteria -> author K reward candidates and the judge -> per iteration: revise (after the
first), review, validate and fix, wait for approval (when asked), train candidates x configs x
seeds in parallel, evaluate and judge (`runs.py`) -> pass, or go on. The session's state is one
`SessionState` (`state.py`); the iteration's stages are in `stages.py`, the activity calls in
`steps.py`; what people send goes through `Steering` (`steering.py`). The history holds ids, S3
keys, scores, accounting and short text.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.accounting import BudgetExhausted
    from workflows.contracts import activities as act
    from workflows.contracts.lessons import LessonRequest
    from workflows.contracts.session import (
        SessionCarry,
        SessionInput,
        SessionResult,
        SessionStatus,
        input_errors,
    )
    from workflows.contracts.steering import ApprovalDecision
    from workflows.runs import train_and_judge
    from workflows.stages import (
        FAILED_STAGE_PATCH,
        LESSON_PATCH,
        STAGE_FAILURE_PATCH,
        IterationStages,
        Plan,
        llm_failure,
        stage_failure,
    )
    from workflows.state import SessionState
    from workflows.steering import Steering
    from workflows.step_base import SHORT_RETRY
    from workflows.steps import Steps
    from workflows.verdict import record_verdict


def _count_session(outcome: str) -> None:
    """Sessions by outcome, for the workers' Prometheus endpoint (not counted on replay)."""
    workflow.metric_meter().create_counter(
        "policyforge_sessions", "sessions ended, by outcome", "sessions"
    ).add(1, {"outcome": outcome})


@workflow.defn
class SessionWorkflow(IterationStages):
    """A session: from a sentence to a policy that passes its criteria, or the best one tried."""

    def __init__(self) -> None:
        self._steering = Steering()
        self._state: SessionState | None = None
        # What this iteration went on without (a candidate with no usable answer, a review or
        # the video judge's criteria that failed), for its record.
        self._dropped: list[str] = []

    @workflow.query
    def status(self) -> SessionStatus | None:
        """Where the session is: stage, iteration, scores, spend, what waits for a person."""
        return self._state.live_status() if self._state else None

    @workflow.run
    async def run(
        self, raw_input: dict[str, Any], carry: SessionCarry | None = None
    ) -> SessionResult:
        """Iterate until an iteration passes, the iterations or a budget run out, or a person
        aborts; continue as new between iterations when the history grows long."""
        # The input arrives as a plain dict so that bad input becomes a one-line, non-retryable
        # error naming the field, instead of a workflow task that fails to decode forever.
        errors = input_errors(raw_input)
        if errors:
            raise ApplicationError("; ".join(errors), type="InvalidInput", non_retryable=True)
        inp = SessionInput.model_validate(raw_input)
        session_id = inp.session_id or workflow.info().workflow_id
        self._state = state = SessionState(inp, session_id, self._steering)
        if carry is None:
            workflow.logger.info("session started", extra={"session_id": session_id})
        else:
            state.restore(carry)
            workflow.logger.info(
                "session continued as new",
                extra={"session_id": session_id, "iterations_done": len(state.records)},
            )

        note: str | None = None
        steering = self._steering
        main = asyncio.create_task(self._iterate(Steps(state), fresh=carry is None))
        # An abort (update or signal) cancels the loop and its running activities.
        await workflow.wait_condition(lambda: main.done() or steering.abort_reason is not None)
        if not main.done():
            main.cancel()
        try:
            onward = await main
            if onward is not None and steering.abort_reason is None:
                # A fresh history for the next iterations; updates in flight finish first.
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(args=[raw_input, onward])
        except BudgetExhausted as exc:
            note = str(exc)
            workflow.logger.info("budget exhausted", extra={"session_id": session_id})
        except (asyncio.CancelledError, ActivityError, ApplicationError) as exc:
            # Cancelled activities surface as either, depending on where the loop was waiting.
            if steering.abort_reason is None:
                if isinstance(exc, asyncio.CancelledError):
                    raise
                line = stage_failure(exc, state.status.stage, state.offline)
                if state.records and llm_failure(exc) and workflow.patched(STAGE_FAILURE_PATCH):
                    # Trained, judged iterations stay: the session stops with its best.
                    note = f"stopped: {line}"
                else:
                    self._failed(exc)
                    if workflow.patched(STAGE_FAILURE_PATCH):
                        kind = getattr(getattr(exc, "cause", None), "type", None) or getattr(
                            exc, "type", None
                        )
                        raise ApplicationError(line, type=kind, non_retryable=True) from None
                    raise
        if steering.abort_reason is not None:
            note = f"aborted: {steering.abort_reason}"
        steering.ended = True
        result = self._result(note, aborted=steering.abort_reason is not None)
        if result.status != "aborted" and state.records and workflow.patched(LESSON_PATCH):
            await self._record_lesson(result.status)
        return result

    # --- the loop (README: "How a session runs") ------------------------------------------------

    async def _iterate(self, steps: Steps, fresh: bool) -> SessionCarry | None:
        """The iterations; returns what the next run takes over when this run's history is
        long enough to continue as new, else None (passed or out of iterations)."""
        state = self.state
        rewards = await self._author(steps) if fresh else []
        started_at = state.iteration
        while state.iteration < state.max_iterations:  # extend() raises the limit
            if state.iteration > started_at and state.continue_due(state.iteration - started_at):
                return state.carry()
            state.iteration += 1
            plan = Plan(rewards) if state.iteration == 1 else await self._revise(steps)
            if not steps.offline:
                await self._review(steps, plan)
            await self._validate(steps, plan)
            if state.inp.approval == "every" or (
                state.inp.approval == "first" and state.iteration == 1
            ):
                await self._approval_gate(plan.rewards)
            record = await train_and_judge(steps, plan.rewards)
            if self._judged(record, plan):
                return None
            state.accounting.check()
        return None

    async def _record_lesson(self, status: str) -> None:
        """What this session learnt, for the next sessions on the same intent (a failure here
        never fails the session: it only costs the lesson)."""
        state = self.state
        best = max(state.records, key=lambda r: (r.passed, r.score))
        req = LessonRequest(
            session_id=state.session_id,
            prompt=state.inp.prompt,
            env_id=state.inp.env_id,
            llm_model=state.inp.llm_model,
            status=status,
            iterations=state.records,
            best=state.evidence.get(best.iteration),
            total_timesteps=state.inp.total_timesteps,
            algo=state.inp.algo,
        )
        try:
            await Steps(state).call(act.RECORD_LESSON, req, retry=SHORT_RETRY)
        except ActivityError as exc:
            workflow.logger.warning(
                "lesson not recorded",
                extra={"session_id": state.session_id, "error": str(exc.cause or exc)},
            )

    def _failed(self, exc: ActivityError | ApplicationError) -> None:
        """The one line that says why the session failed (which agent, in which stage), in its
        status and the Web UI's details. Behind a patch: sessions that failed before this
        release replay (queries on them) without the stage change this makes."""
        if workflow.patched(FAILED_STAGE_PATCH):
            line = stage_failure(exc, self.state.status.stage, self.state.offline)
            note = line if line.startswith("refused: ") else f"failed: {line}"
            self.state.stage("failed", note=note)
        _count_session("failed")

    def _result(self, note: str | None, aborted: bool = False) -> SessionResult:
        state = self.state
        records = state.records
        best = max(records, key=lambda r: (r.passed, r.score)) if records else None
        status: Literal["passed", "not_passed", "budget_exhausted", "aborted", "stopped"]
        if aborted:
            status = "aborted"
        elif note is not None and note.startswith("stopped: "):
            status = "stopped"
        elif note is not None:
            status = "budget_exhausted"
        else:
            status = "passed" if best is not None and best.passed else "not_passed"
        state.stage("done", note=note)
        _count_session(status)
        return SessionResult(
            session_id=state.session_id,
            status=status,
            passed=bool(best and best.passed),
            model_label=state.status.model_label,
            best_iteration=best.iteration if best else None,
            best_score=best.score if best else None,
            best=best,
            iterations=records,
            criteria=state.status.criteria,
            verdict=record_verdict(best) if best else "",
            llm_usage=state.accounting.session,
            training_seconds=round(state.accounting.training_seconds, 2),
            note=note,
            unmeasured=state.status.unmeasured,
        )

    # --- a person in the loop: updates (validated) and signals of the same names ---------------

    @workflow.update
    async def approve_reward(self, decision: ApprovalDecision | None = None) -> str:
        """Approve (or reject) the reward waiting at the gate."""
        return self._steering.approve(decision)

    @approve_reward.validator
    def _validate_approve_reward(self, decision: ApprovalDecision | None = None) -> None:
        self._steering.check_approve(decision)

    @workflow.update
    async def give_feedback(self, text: str) -> str:
        """Feedback for the next revision."""
        return self._steering.give_feedback(text)

    @give_feedback.validator
    def _validate_give_feedback(self, text: str) -> None:
        self._steering.check_feedback(text)

    @workflow.update
    async def abort(self, reason: str = "") -> str:
        """Stop the session, keeping the best policy so far."""
        return self._steering.abort(reason)

    @abort.validator
    def _validate_abort(self, reason: str = "") -> None:
        self._steering.check_abort(reason)

    @workflow.update
    async def extend(self, iterations: int) -> str:
        """Allow this many more iterations."""
        return self._steering.extend(iterations)

    @extend.validator
    def _validate_extend(self, iterations: int) -> None:
        self._steering.check_extend(iterations)

    @workflow.signal(name="approve")
    def approve_signal(self, decision: ApprovalDecision | None = None) -> None:
        """`approve_reward` as a signal."""
        s = self._steering
        s.signalled("approve", s.check_approve, s.approve, decision)

    @workflow.signal(name="feedback")
    def feedback_signal(self, text: str) -> None:
        """`give_feedback` as a signal."""
        s = self._steering
        s.signalled("feedback", s.check_feedback, s.give_feedback, text)

    @workflow.signal(name="abort")
    def abort_signal(self, reason: str = "") -> None:
        """`abort` as a signal."""
        s = self._steering
        s.signalled("abort", s.check_abort, s.abort, reason)

    @workflow.signal(name="extend")
    def extend_signal(self, iterations: int) -> None:
        """`extend` as a signal."""
        s = self._steering
        s.signalled("extend", s.check_extend, s.extend, iterations)
