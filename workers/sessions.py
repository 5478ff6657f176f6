"""The session client: what the CLI and the demo do to a session on Temporal.

Start a session and follow it to its result, query a running one's status, and steer it with
the workflow's updates (approve, feedback, abort, extend). Every failure a person can cause
(no such session, an update the workflow refuses) ends the command with a one-line error;
the text these commands print is in `workers/render.py`.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from rich.console import Console
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

from workers.client import connect
from workers.render import (
    failure_json,
    print_result,
    print_status,
    progress_description,
    say,
    session_progress,
    status_json,
)
from workers.settings import Settings
from workflows.contracts.queues import queue_worker, task_queue
from workflows.contracts.session import SessionResult, SessionStatus
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


def workflow_id_for(prompt: str) -> str:
    """A readable, unique workflow id from the prompt: 'pf-run-forward-1a2b3c4d'."""
    slug = re.sub(r"[^a-z0-9]+", "-", prompt.lower()).strip("-")[:32].strip("-")
    return f"pf-{slug}-{uuid.uuid4().hex[:8]}"


def session_memo(prompt: str, settings: Settings) -> dict[str, str]:
    """What a session's start records beside its input: the prompt (the dashboard's list shows
    it) and where the dashboard is (the Web UI's details link to the session's page there)."""
    return {"prompt": prompt, "dashboard_url": settings.dashboard_url}


async def start_and_follow(
    data: dict[str, Any], *, workflow_id: str | None, detach: bool, as_json: bool
) -> SessionResult | None:
    """Start a SessionWorkflow with `data` (a SessionInput's fields) and, unless detached,
    follow it live and print its result; None when detached. A session that fails ends the
    command (status 1) with the one line that says why (`--json`: also as `error`)."""
    settings = Settings()
    console = Console(stderr=as_json, soft_wrap=True)
    client = await connect(settings)
    wid = workflow_id or workflow_id_for(data["prompt"])
    if settings.queue_prefix != "policyforge":
        data = {**data, "queue_prefix": settings.queue_prefix}
    handle = await client.start_workflow(
        "SessionWorkflow",
        data,
        id=wid,
        task_queue=task_queue("llm", settings.queue_prefix),
        result_type=SessionResult,
        memo=session_memo(data["prompt"], settings),
    )
    ui_link = settings.ui_link(wid, client.namespace)
    console.print(f"session {wid} started  ({ui_link})")
    console.print(f"  dashboard: {settings.dashboard_url}/sessions/{wid}")
    if detach:
        console.print(f"follow it with: policyforge status {wid}")
        return None
    try:
        result = await follow(handle, console, client=client)
    except WorkflowFailureError as exc:
        reason = failure_reason(exc)
        if as_json:
            print(failure_json(wid, reason, ui_link))
        raise SystemExit(f"error: session {wid} failed: {reason}\n  {ui_link}") from None
    print_result(result, console, as_json=as_json, ui_link=ui_link)
    return result


async def show_status(session_id: str, as_json: bool) -> None:
    """`policyforge status`: a completed session's result, else its live status."""
    settings = Settings()
    client = await connect(settings)
    handle = client.get_workflow_handle(session_id, result_type=SessionResult)
    try:
        desc = await handle.describe()
    except Exception as exc:  # noqa: BLE001 - RPCError NOT_FOUND and friends
        raise SystemExit(
            f"error: no session {session_id!r} on {settings.address}: {shown(exc)}"
        ) from None
    console = Console(soft_wrap=True)
    ui_link = settings.ui_link(session_id, client.namespace)
    if desc.status == WorkflowExecutionStatus.COMPLETED:
        print_result(await handle.result(), console, as_json=as_json, ui_link=ui_link)
        return
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
    if as_json:
        print(status_json(session_id, desc.status, status, error))
        return
    print_status(console, session_id, desc.status, status, ui_link, error)


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


async def follow(
    handle: WorkflowHandle[Any, SessionResult],
    console: Console,
    poll_s: float = 1.0,
    *,
    client: Client | None = None,
) -> SessionResult:
    """Show stage, iteration and timesteps until the session ends; return its result. With
    `client`, also say once when it waits on a queue no worker polls."""
    progress = session_progress(console)
    task = progress.add_task("starting", total=1)
    last_line = ""
    last_waiting: str | None = None
    with progress:
        while True:
            status = await query_status(handle)
            described = await handle.describe()
            steps, wf_status = training_timesteps(described), described.status
            if wf_status != WorkflowExecutionStatus.RUNNING:
                break
            if client is not None:
                waiting = await waiting_for_worker(client, described)
                if waiting and waiting != last_waiting:
                    say(console, f"  {waiting}")
                last_waiting = waiting
            if status is not None:
                done = status.timesteps_done if steps is None else steps
                if status.stage in ("validating", "authoring", "revising"):
                    done = 0
                desc = progress_description(status)
                # PPO rounds the budget up to whole rollouts: never show 200,704/200,000.
                total = status.timesteps_target
                progress.update(task, description=desc, completed=min(done, total), total=total)
                line = f"{status.stage} iteration {status.iteration}"
                if line != last_line and not console.is_terminal:
                    console.print(f"  {desc}")
                last_line = line
            await asyncio.sleep(poll_s)
    return await handle.result()


class SteeringRefused(RuntimeError):
    """An update the session refused, or a session that is not there; one line saying why."""


async def approve(
    session_id: str, *, reject: bool = False, note: str = "", client: Client | None = None
) -> str:
    """Approve (or reject, with a note) the reward waiting at the session's approval gate."""
    from workflows.contracts.steering import ApprovalDecision
    from workflows.session import SessionWorkflow

    decision = ApprovalDecision(approve=not reject, note=note)
    return await _update(
        session_id,
        "approve",
        lambda h: h.execute_update(SessionWorkflow.approve_reward, decision),
        client,
    )


async def give_feedback(session_id: str, text: str, client: Client | None = None) -> str:
    """Feedback for the reviser to take into the session's next iteration."""
    from workflows.session import SessionWorkflow

    return await _update(
        session_id,
        "feedback",
        lambda h: h.execute_update(SessionWorkflow.give_feedback, text),
        client,
    )


async def abort(session_id: str, reason: str, client: Client | None = None) -> str:
    """Stop the session: running work is cancelled, the best policy so far is kept."""
    from workflows.session import SessionWorkflow

    return await _update(
        session_id, "abort", lambda h: h.execute_update(SessionWorkflow.abort, reason), client
    )


async def extend(session_id: str, iterations: int, client: Client | None = None) -> str:
    """Allow the session this many more iterations."""
    from workflows.session import SessionWorkflow

    return await _update(
        session_id,
        "extend",
        lambda h: h.execute_update(SessionWorkflow.extend, iterations),
        client,
    )


async def _update(
    session_id: str,
    command: str,
    send: Callable[[WorkflowHandle[Any, Any]], Awaitable[str]],
    client: Client | None,
) -> str:
    """One update on a running session (the CLI and the dashboard send the same); its answer,
    or SteeringRefused with the validator's reason."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    client = client or await connect(Settings())
    handle = client.get_workflow_handle(session_id)
    try:
        return await send(handle)
    except WorkflowUpdateFailedError as exc:
        cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
        raise SteeringRefused(f"{command} refused: {shown(cause)}") from None
    except RPCError as exc:
        raise SteeringRefused(f"session {session_id!r}: {shown(exc.message)}") from None
