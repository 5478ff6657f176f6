"""The base of a session's steps: one activity call on its pool's queue, with its deadlines and
retries, and one LLM call within the session's spend; the retry policies and patch markers
the steps share, and the one-line reading of a failure.

Every call goes through an `ActivityRef` (workflows/contracts/activities.py), so the type checker
holds each request and result to the activity's declared types, while no step imports activity
code (tests register stand-ins under the same names). Every LLM call's tokens and cost go
through `Accounting`."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import timeouts
    from workflows.contracts.activities import ActivityRef
    from workflows.contracts.llm import (
        FixResult,
    )
    from workflows.contracts.queues import task_queue, train_queue
    from workflows.contracts.usage import LLMCall
    from workflows.state import SessionState

Req = TypeVar("Req")
Res = TypeVar("Res")

LLM_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(seconds=2))
SHORT_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))
# A session that asks for a GPU or a CPU sends its train-pool work to that kind's queue.
# Sessions recorded before had no accelerator (any), never take this branch, and keep the
# shared queue; the marker guards the new commands all the same.
ACCELERATOR_PATCH = "accelerator-train-queue"


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


class StepsBase:
    """What every step needs: the session's input and state, and the calls."""

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
