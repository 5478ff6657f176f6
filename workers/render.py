"""What the session commands print: progress lines, the status summary and the final report.

Pure output: everything here takes what the session client (`workers/sessions.py`) fetched and
writes it to a rich Console, so the text can be checked without a server.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from temporalio.client import WorkflowExecutionStatus

from workflows.contracts.session import IterationRecord, SessionResult, SessionStatus
from workflows.contracts.usage import LLMUsage


def session_progress(console: Console) -> Progress:
    """The progress bar `policyforge run` shows while following a session (timesteps)."""
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def progress_description(status: SessionStatus) -> str:
    """The progress bar's label: 'training   iteration 2/5  best 0.61'."""
    desc = f"{status.stage:<10} iteration {status.iteration}/{status.max_iterations}"
    if status.best_score is not None:
        desc += f"  best {status.best_score:.2f}"
    return desc


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


def print_status(
    console: Console,
    session_id: str,
    workflow_status: WorkflowExecutionStatus | None,
    status: SessionStatus | None,
    ui_link: str,
    error: str | None = None,
) -> None:
    """`policyforge status` on a session that has not completed: stage, budget, what it waits
    for, and one line per judged iteration (only the Web UI link when it cannot be queried);
    for one that failed (was terminated, timed out), first the one line that says why."""
    state = workflow_status.name.lower() if workflow_status else "?"
    console.print(f"session {session_id}: {state}")
    if error is not None:
        console.print(f"  failed: {escape(error)}", soft_wrap=True)
    if status:
        console.print(
            f"  stage {status.stage}, iteration {status.iteration}/{status.max_iterations}, "
            f"author {status.model_label}, best score "
            + (f"{status.best_score:.2f}" if status.best_score is not None else "-")
        )
        if status.stage in ("training", "evaluating", "judging"):
            console.print(f"  timesteps {status.timesteps_done:,} / {status.timesteps_target:,}")
        console.print(f"  {usage_line(status.llm_usage, status.training_seconds)}")
        if status.awaiting_approval is not None:
            console.print(
                f"  waiting for approval of iteration {status.awaiting_approval}: "
                f"policyforge approve {session_id}  (or --reject --note ...)"
            )
            for reward in status.pending_rewards:
                console.print(f"    {reward.key}  {reward.latex}")
        if status.feedback_pending:
            console.print(f"  feedback waiting for the next revision: {status.feedback_pending}")
        for error in status.signal_errors[-3:]:
            console.print(f"  {error}")
        for rec in status.iterations:
            console.print(f"  iter {rec.iteration}: score {rec.score:.2f}  {escape(rec.diagnosis)}")
            for c in rec.criteria:
                console.print(f"    {escape(c.line()[2:])}", highlight=False)
            for line in run_lines(rec):
                console.print(f"    {line}", highlight=False)
    console.print(f"  {ui_link}")


def status_json(
    session_id: str,
    workflow_status: WorkflowExecutionStatus | None,
    status: SessionStatus | None,
    error: str | None = None,
) -> str:
    """`policyforge status --json`: the status query's answer ("null" when it cannot be
    queried); for a session that failed, an object with the status's fields, if any, and
    `workflow_status` and `error` (the one line)."""
    if error is None:
        return status.model_dump_json(indent=2) if status else "null"
    data = status.model_dump(mode="json") if status else {"session_id": session_id}
    state = workflow_status.name.lower() if workflow_status else None
    return json.dumps({**data, "workflow_status": state, "error": error}, indent=2)


def failure_json(session_id: str, error: str, ui_link: str) -> str:
    """`policyforge run --json` for a session that failed: what a script needs to say why."""
    return json.dumps(
        {"session_id": session_id, "status": "failed", "error": error, "ui_link": ui_link},
        indent=2,
    )


def print_result(result: SessionResult, console: Console, *, as_json: bool, ui_link: str) -> None:
    """A finished session's result: as JSON on stdout for scripts, else the report for people."""
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    from activities.artifacts import bucket_name

    report(result, console, bucket_name(), ui_link)


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


def run_lines(rec: IterationRecord) -> list[str]:
    """One line per run of an iteration that had several: candidate, config, seed, training
    return and score (none for a single run: its row says it all)."""
    if len(rec.run_results) < 2:
        return []
    how = "trained together" if rec.batched else "trained one process each"
    lines = [f"{len(rec.run_results)} runs, {how}:"]
    for r in rec.run_results:
        ret = "-" if r.mean_return is None else f"{r.mean_return:,.1f}"
        won = "  <- won" if r.candidate == rec.candidate and r.config == rec.config else ""
        lines.append(
            f"c{r.candidate} {r.config} seed {r.seed}: return {ret}, score {r.score:.2f}{won}"
        )
    return lines


def _steps(rec: IterationRecord) -> str:
    """The budget, or "used of budget (stopped at pass at N%)" when a run stopped early."""
    if rec.stopped_at_pct is not None and rec.timesteps_used is not None:
        return f"{rec.timesteps_used:,} of {rec.timesteps:,} (passed at {rec.stopped_at_pct}%)"
    return f"{rec.timesteps:,}"


def report(result: SessionResult, console: Console, bucket: str, ui_link: str) -> None:
    """The final report: one table row per iteration, the verdict, spend, and where the best
    policy's files are (s3:// keys, a presigned video link when credentials allow)."""
    table = Table(title=f"session {result.session_id}", show_lines=False)
    for col in ("iter", "timesteps", "score", "passed", "diagnosis"):
        table.add_column(col, overflow="fold")
    for rec in result.iterations:
        table.add_row(
            str(rec.iteration),
            _steps(rec),
            f"{rec.score:.2f}",
            "yes" if rec.passed else "no",
            escape(rec.diagnosis + _revision_note(rec)),
        )
    console.print(table)
    for rec in result.iterations:
        lines = run_lines(rec)
        if lines:
            console.print(f"  iter {rec.iteration} runs:", highlight=False)
            for line in lines:
                console.print(f"    {line}", highlight=False)
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
