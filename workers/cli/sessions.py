"""The session client: what the CLI and the demo do to a session on Temporal.

Start a session and follow it to its result, show its status (read by
`workers/cli/session_state.py`), and steer it with the workflow's updates (approve, feedback,
abort, extend). Every failure a person can cause (no such session, an update the workflow
refuses) ends the command with a one-line error; the text these commands print is in
`workers/cli/render.py`.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)

from workers.cli.render import (
    failure_json,
    print_result,
    print_status,
    progress_description,
    say,
    session_progress,
    status_json,
)

# What reads a session lives in session_state; the dashboard and tests import these from here.
from workers.cli.session_state import (
    NoSuchSession,
    failure_reason,
    query_status,
    session_state,
    training_timesteps,
    waiting_for_worker,
)
from workers.client import connect
from workers.settings import Settings
from workflows.contracts.queues import task_queue
from workflows.contracts.session import SessionResult
from workflows.contracts.shown import shown


def workflow_id_for(prompt: str) -> str:
    """A readable, unique workflow id from the prompt: 'pf-run-forward-1a2b3c4d'."""
    slug = re.sub(r"[^a-z0-9]+", "-", prompt.lower()).strip("-")[:32].strip("-")
    return f"pf-{slug}-{uuid.uuid4().hex[:8]}"


def session_memo(prompt: str, settings: Settings) -> dict[str, str]:
    """What a session's start records beside its input: the prompt (the dashboard's list shows
    it) and where the dashboard is (the Web UI's details link to the session's page there)."""
    return {"prompt": prompt, "dashboard_url": settings.dashboard_url}


async def start_session(
    client: Client,
    data: dict[str, Any],
    *,
    workflow_id: str | None = None,
    settings: Settings | None = None,
) -> WorkflowHandle[Any, SessionResult]:
    """Start a SessionWorkflow with `data` (a SessionInput's fields, checked by the caller) on
    the configured queues, its prompt and dashboard in the memo; its handle. What `policyforge
    run` and `policyforge.Session.start` both do."""
    settings = settings or Settings()
    wid = workflow_id or workflow_id_for(data["prompt"])
    if settings.queue_prefix != "policyforge":
        data = {**data, "queue_prefix": settings.queue_prefix}
    return await client.start_workflow(
        "SessionWorkflow",
        data,
        id=wid,
        task_queue=task_queue("llm", settings.queue_prefix),
        result_type=SessionResult,
        memo=session_memo(data["prompt"], settings),
    )


async def start_and_follow(
    data: dict[str, Any],
    *,
    workflow_id: str | None,
    detach: bool,
    as_json: bool,
    links: bool = True,
) -> SessionResult | None:
    """Start a SessionWorkflow with `data` (a SessionInput's fields) and, unless detached,
    follow it live and print its result; None when detached. A session that fails ends the
    command (status 1) with the one line that says why (`--json`: also as `error`). Without
    `links`, no links at all: for a caller whose services end with it, and which says itself
    where its own pages are while they last (the demo)."""
    settings = Settings()
    console = Console(stderr=as_json, soft_wrap=True)
    client = await connect(settings)
    handle = await start_session(client, data, workflow_id=workflow_id, settings=settings)
    wid = handle.id
    ui_link = settings.ui_link(wid, client.namespace)
    say(console, f"session {shown(wid)} started" + (f"  ({ui_link})" if links else ""))
    say(console, f"  budget: {budget_line(data)}")
    if expected := expected_line(data):
        say(console, f"  expected: {expected}")
    if links:
        say(console, f"  dashboard: {settings.dashboard_link(wid)}")
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
    dashboard = settings.dashboard_link(wid)
    print_result(
        result, console, as_json=as_json, ui_link=ui_link, dashboard_link=dashboard, where=links
    )
    return result


def budget_line(data: dict[str, Any]) -> str:
    """'1,000,000 steps per run (Walker2d-v5's budget), stopping from 50,000 once a checkpoint
    passes': what the first iteration may train."""
    from workflows.contracts.session import SessionInput

    inp = SessionInput.model_validate(data)
    whose = "as asked" if data.get("total_timesteps") else f"{inp.env_id}'s budget"
    return (
        f"{inp.total_timesteps:,} steps per run ({whose}), stopping from "
        f"{inp.min_training_steps:,} once a checkpoint passes"
    )


def expected_line(data: dict[str, Any], cores: int | None = None) -> str | None:
    """'up to 8 min per run (2,100 steps/s measured for Walker2d-v5 on 2 cores), 3
    iterations at most; a run stops early once a checkpoint passes', or None for an env
    without a measured speed. `cores`: this machine's (the figure is the reference
    machine's: said so where they differ)."""
    from workflows.contracts.budgets import REFERENCE_CORES, STEPS_PER_S, expected_seconds
    from workflows.contracts.session import SessionInput

    inp = SessionInput.model_validate(data)
    seconds = expected_seconds(inp.env_id, inp.total_timesteps)
    if seconds is None:
        return None
    cores = cores or os.cpu_count() or REFERENCE_CORES
    machine = "" if cores == REFERENCE_CORES else f"; this machine has {cores}"
    rate = STEPS_PER_S[inp.env_id]
    iterations = f"{inp.max_iterations} iterations at most" if inp.max_iterations > 1 else "once"
    return (
        f"up to {_duration(seconds)} per run ({rate:,.0f} steps/s measured for {inp.env_id} "
        f"on {REFERENCE_CORES} cores{machine}), {iterations}; a run stops early once a "
        "checkpoint passes"
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


async def show_status(session_id: str, as_json: bool) -> None:
    """`policyforge status`: a completed session's result, else its live status."""
    settings = Settings()
    client = await connect(settings)
    try:
        state = await session_state(client, session_id)
    except NoSuchSession as exc:
        raise SystemExit(f"error: {exc}") from None
    console = Console(soft_wrap=True)
    ui_link = settings.ui_link(session_id, client.namespace)
    dashboard = settings.dashboard_link(session_id)
    if state.result is not None:
        print_result(
            state.result, console, as_json=as_json, ui_link=ui_link, dashboard_link=dashboard
        )
    elif as_json:
        print(status_json(session_id, state.workflow_status, state.status, state.error))
    else:
        print_status(console, session_id, state.workflow_status, state.status, ui_link, state.error)
        say(console, f"  dashboard {dashboard}")


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
