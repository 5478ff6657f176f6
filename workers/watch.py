"""Following a running session: live progress, and the final report."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle

from workflows.contracts.session import IterationRecord, SessionResult, SessionStatus
from workflows.contracts.usage import LLMUsage


async def live_timesteps(handle: WorkflowHandle) -> tuple[int | None, Any]:
    """Timesteps of running training activities, from their heartbeats (mean over seeds)."""
    desc = await handle.describe()
    steps = []
    for pending in desc.raw_description.pending_activities:
        if pending.activity_type.name != "train_policy" or not pending.heartbeat_details.payloads:
            continue
        try:
            details = json.loads(pending.heartbeat_details.payloads[0].data)
            steps.append(int(details["timesteps"]))
        except (ValueError, KeyError, TypeError):
            continue
    return (sum(steps) // len(steps) if steps else None), desc.status


async def query_status(handle: WorkflowHandle) -> SessionStatus | None:
    from workflows.session import SessionWorkflow

    try:
        return await handle.query(SessionWorkflow.status)
    except Exception:  # noqa: BLE001 - no worker yet, or workflow not started: show nothing
        return None


async def follow(handle: WorkflowHandle, console: Console, poll_s: float = 1.0) -> SessionResult:
    """Show stage, iteration and timesteps until the session ends; return its result."""
    progress = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    task = progress.add_task("starting", total=1)
    last_line = ""
    with progress:
        while True:
            status = await query_status(handle)
            steps, wf_status = await live_timesteps(handle)
            if wf_status != WorkflowExecutionStatus.RUNNING:
                break
            if status is not None:
                done = status.timesteps_done if steps is None else steps
                if status.stage in ("validating", "authoring", "revising"):
                    done = 0
                desc = f"{status.stage:<10} iteration {status.iteration}/{status.max_iterations}"
                if status.best_score is not None:
                    desc += f"  best {status.best_score:.2f}"
                # PPO rounds the budget up to whole rollouts: never show 200,704/200,000.
                total = status.timesteps_target
                progress.update(task, description=desc, completed=min(done, total), total=total)
                line = f"{status.stage} iteration {status.iteration}"
                if line != last_line and not console.is_terminal:
                    console.print(f"  {desc}")
                last_line = line
            await asyncio.sleep(poll_s)
    return await handle.result()


def usage_line(usage: LLMUsage, training_seconds: float) -> str:
    """'LLM: 8 calls, 12,345 in / 3,210 out tokens, ~$0.0812; training 3.2 min'."""
    if usage.calls == 0:
        llm = "LLM: no calls"
    else:
        cost = f"~${usage.cost_usd:.4f}"
        if usage.unpriced_calls:
            cost += f" (+{usage.unpriced_calls} calls with no known price)"
        llm = (
            f"LLM: {usage.calls} calls, {usage.input_tokens:,} in / {usage.output_tokens:,} out "
            f"tokens, {cost}"
        )
    return f"{llm}; training {training_seconds / 60:.1f} min"


def _revision_note(rec: IterationRecord) -> str:
    """How the reviser got to this iteration's reward: what it changed, from which iteration,
    after looking at what."""
    if not rec.changes:
        return ""
    note = f"\n(changed: {rec.changes}"
    if rec.based_on is not None and rec.based_on != rec.iteration - 1:
        note += f"; rebased on iteration {rec.based_on}"
    if rec.tools_used:
        note += f"; looked up {', '.join(rec.tools_used)}"
    return note + ")"


def report(result: SessionResult, console: Console, bucket: str, ui_link: str) -> None:
    table = Table(title=f"session {result.session_id}", show_lines=False)
    for col in ("iter", "timesteps", "score", "passed", "diagnosis"):
        table.add_column(col, overflow="fold")
    for rec in result.iterations:
        table.add_row(
            str(rec.iteration),
            f"{rec.timesteps:,}",
            f"{rec.score:.2f}",
            "yes" if rec.passed else "no",
            escape(rec.diagnosis + _revision_note(rec)),
        )
    console.print(table)
    verdict = {
        "passed": "[green]PASSED[/green]",
        "not_passed": "[yellow]NOT PASSED[/yellow]",
        "budget_exhausted": "[yellow]BUDGET EXHAUSTED[/yellow]",
        "aborted": "[yellow]ABORTED[/yellow]",
    }[result.status]
    if result.note:
        console.print(f"{verdict}  {escape(result.note)}")
    console.print(f"  {usage_line(result.llm_usage, result.training_seconds)}")
    if result.best is None or result.best_score is None:
        console.print(f"no iteration was judged  (author: {result.model_label})")
        console.print(f"  Temporal UI {ui_link}")
        return
    best = result.best.best_run
    console.print(
        f"{verdict}  best iteration {result.best_iteration}, score {result.best_score:.2f}"
        f"  (author: {result.model_label})"
    )
    for label, key in (
        ("policy", best.model_key),
        ("normalizer", best.vecnormalize_key),
        ("video", best.video_key),
        ("trajectory", best.trajectory_key),
        ("reward", result.best.reward_key),
    ):
        if key:
            console.print(f"  {label:<11} s3://{bucket}/{key}")
    if best.video_key:
        try:
            from activities.artifacts import ArtifactStore

            link = ArtifactStore(bucket).presigned_url(best.video_key)
            console.print(f"  watch       {link}  (valid 1 h)")
        except Exception:  # noqa: BLE001 - no credentials here: the s3:// key above still works
            pass
    console.print(f"  Temporal UI {ui_link}")
