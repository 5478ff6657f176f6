"""What a session is now, read from Temporal: its result or live status, why it failed, what
it waits for, and the input it started with. `policyforge status`, `play`, the dashboard and
`policyforge.Session` read sessions through here (workers/cli/sessions.py starts and steers them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.exceptions import (
    ActivityError,
    CancelledError,
    TerminatedError,
)
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from workflows.contracts.queues import queue_worker
from workflows.contracts.session import IterationRecord, SessionResult, SessionStatus
from workflows.contracts.shown import shown

# A session that ended without a result; `policyforge status` says why.
_ENDED_BADLY = {
    WorkflowExecutionStatus.FAILED,
    WorkflowExecutionStatus.TERMINATED,
    WorkflowExecutionStatus.TIMED_OUT,
    WorkflowExecutionStatus.CANCELED,
}


def failure_reason(exc: WorkflowFailureError) -> str:
    """Why a session ended without a result, on one line: the innermost cause's message (what
    failed, not where it surfaced: "ANTHROPIC_API_KEY is not set ..."), naming the activity
    when that cause is its timeout; or that it was terminated (with the reason given),
    cancelled, or ran past its execution timeout."""
    cause = exc.cause
    if isinstance(cause, TerminatedError):
        given = cause.message not in ("", "Workflow terminated")
        return "terminated" + (f" ({_one_line(cause.message)})" if given else "")
    if isinstance(cause, TemporalTimeoutError):
        return "the workflow ran past its execution timeout"
    if isinstance(cause, CancelledError):
        return "cancelled"
    inner: BaseException = cause or exc
    activity_type = None
    while True:
        if isinstance(inner, ActivityError):
            activity_type = inner.activity_type
        nested = getattr(inner, "cause", None) or inner.__cause__
        if not isinstance(nested, BaseException):
            break
        inner = nested
    message = getattr(inner, "message", None) or str(inner) or type(inner).__name__
    if isinstance(inner, TemporalTimeoutError) and activity_type:
        message = f"{activity_type}: {message}"
    return _one_line(message)


def _one_line(text: str) -> str:
    """One line of at most 500 characters; what is left of control or invisible characters
    (a message may quote generated code) written as escapes."""
    return shown(" ".join(text.split()), 500)


async def why_ended(handle: WorkflowHandle[Any, Any]) -> str | None:
    """The one line that says why a closed session has no result (from its history: no worker
    needed); None when it completed."""
    try:
        await handle.result()
    except WorkflowFailureError as exc:
        return failure_reason(exc)
    return None


class NoSuchSession(LookupError):
    """No session of that id on the server; the message says so in one line."""


@dataclass
class SessionState:
    """A session as `policyforge status` and `policyforge.Session.status` see it: its
    workflow's status, its result once completed, else its live status (None while no worker
    answers), and the one line that says why it failed, if it did."""

    session_id: str
    workflow_status: WorkflowExecutionStatus | None
    result: SessionResult | None = None
    status: SessionStatus | None = None
    error: str | None = None

    @property
    def stage(self) -> str:
        """`done` once completed, else the live stage, else the workflow's status."""
        if self.result is not None:
            return "done"
        if self.status is not None:
            return self.status.stage
        return self.workflow_status.name.lower() if self.workflow_status else "unknown"


async def session_state(client: Client, session_id: str) -> SessionState:
    """What a session is now: a completed one's result, else its status query's answer (with
    live timesteps and what it waits for while it runs); NoSuchSession when there is none."""
    handle = client.get_workflow_handle(session_id, result_type=SessionResult)
    try:
        desc = await handle.describe()
    except Exception as exc:  # noqa: BLE001 - RPCError NOT_FOUND and friends
        address = client.service_client.config.target_host
        raise NoSuchSession(f"no session {session_id!r} on {address}: {shown(exc)}") from None
    if desc.status == WorkflowExecutionStatus.COMPLETED:
        return SessionState(session_id, desc.status, result=await handle.result())
    error = await why_ended(handle) if desc.status in _ENDED_BADLY else None
    # A closed session is queried by replaying it on a worker: there may be none.
    status = await query_status(handle, timedelta(seconds=10) if error is not None else None)
    if status is not None and status.stage == "training":
        # The workflow learns timesteps when a run ends; running runs heartbeat them.
        steps, _ = await live_timesteps(handle)
        if steps is not None:
            status = status.model_copy(update={"timesteps_done": steps})
    if status is not None and desc.status == WorkflowExecutionStatus.RUNNING:
        status = status.model_copy(update={"waiting": await waiting_for_worker(client, desc)})
    return SessionState(session_id, desc.status, status=status, error=error)


def best_record(state: SessionState) -> IterationRecord | None:
    """The session's best judged iteration so far (its result's once done), None before any."""
    if state.result is not None:
        return state.result.best
    status = state.status
    if status is None or status.best_iteration is None:
        return None
    return next((r for r in status.iterations if r.iteration == status.best_iteration), None)


async def start_input(client: Client, session_id: str) -> dict[str, Any]:
    """The input the session's latest run started with (what was asked: env_id,
    eval_max_steps, ...), read from its history; {} when it cannot be read."""
    handle = client.get_workflow_handle(session_id)
    async for event in handle.fetch_history_events(page_size=1):
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        if payloads:
            [raw] = await client.data_converter.decode(payloads[:1], [dict])
            return raw if isinstance(raw, dict) else {}
        break
    return {}


def training_timesteps(desc: WorkflowExecutionDescription) -> int | None:
    """Timesteps of a session's running training activities, from their heartbeats (mean
    over seeds); None when none is training."""
    steps = []
    for pending in desc.raw_description.pending_activities:
        if pending.activity_type.name != "train_policy" or not pending.heartbeat_details.payloads:
            continue
        try:
            details = json.loads(pending.heartbeat_details.payloads[0].data)
            steps.append(int(details["timesteps"]))
        except (ValueError, KeyError, TypeError):
            continue
    return sum(steps) // len(steps) if steps else None


# An activity the server holds until a worker of its queue takes it.
_SCHEDULED = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
_DESCRIBE_TIMEOUT = timedelta(seconds=3)


async def waiting_for_worker(client: Client, desc: WorkflowExecutionDescription) -> str | None:
    """What a running session waits for when an activity of it waits on a queue that no
    worker polls: "waiting for a GPU training worker (no worker polls queue ...)"; None when
    none does. One DescribeTaskQueue per such queue (the server lists the pollers it saw in
    the last minutes), only while an activity waits; a call that fails says "unknown" instead
    of failing the status."""
    queues = sorted(
        {
            p.activity_options.task_queue.name
            for p in desc.raw_description.pending_activities
            if p.state == _SCHEDULED and p.activity_options.task_queue.name
        }
    )
    lines = []
    for queue in queues:
        try:
            pollers = await _activity_pollers(client, queue)
        except Exception as exc:  # noqa: BLE001 - status shows what it can: the rest is unknown
            lines.append(f"waiting on queue {queue}: whether a worker polls it is unknown ({exc})")
            continue
        if not pollers:
            lines.append(f"waiting for {queue_worker(queue)} (no worker polls queue {queue})")
    return _one_line("; ".join(lines)) if lines else None


async def _activity_pollers(client: Client, queue: str) -> int:
    """How many workers the server saw polling `queue` for activities lately."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    )
    answer = await client.workflow_service.describe_task_queue(request, timeout=_DESCRIBE_TIMEOUT)
    return len(answer.pollers)


async def live_timesteps(
    handle: WorkflowHandle[Any, Any],
) -> tuple[int | None, WorkflowExecutionStatus | None]:
    """Timesteps of running training activities and the workflow's execution status."""
    desc = await handle.describe()
    return training_timesteps(desc), desc.status


async def query_status(
    handle: WorkflowHandle[Any, Any], timeout: timedelta | None = None
) -> SessionStatus | None:
    """The session's status query, or None while it cannot answer (no worker yet, or none
    within `timeout`)."""
    from workflows.session import SessionWorkflow

    try:
        return await handle.query(SessionWorkflow.status, rpc_timeout=timeout)
    except Exception:  # noqa: BLE001 - no worker yet, or workflow not started: show nothing
        return None
