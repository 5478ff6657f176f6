"""What the session commands print: progress lines, the status summary and the final report.

Pure output: everything here takes what the session client (`workers/cli/sessions.py`) fetched and
writes it to a rich Console, so the text can be checked without a server.

Text that came from generated code or a model (term and criteria names, diagnoses, formulas,
revision notes, errors that quote generated code) is data: it goes out through `shown` (control
and invisible characters as visible escapes) and is never read as rich markup, emoji codes or
highlighted (`say`, `literal`), so it can neither forge a line nor drive the terminal.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, Progress, Task, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from workflows.contracts.session import IterationRecord, SessionResult, SessionStatus
from workflows.contracts.shown import shown
from workflows.contracts.usage import LLMUsage
from workflows.verdict import record_verdict

if TYPE_CHECKING:  # the Temporal client is slow to import: `policyforge --help` needs none
    from temporalio.client import WorkflowExecutionStatus


def literal(text: object, limit: int | None = None) -> Text:
    """Generated text as a rich Text: control, format and invisible characters written as
    escapes (`shown`), and no markup or emoji codes read in it (a table cell, a part of a line)."""
    return Text(shown(text, limit))


def say(console: Console, line: str | Text, *, soft_wrap: bool | None = None) -> None:
    """Print `line` exactly as written: no markup, emoji codes or highlighting. Each part of it
    that came from generated code or a model goes in through `shown`."""
    console.print(line, markup=False, emoji=False, highlight=False, soft_wrap=soft_wrap)


class _SinceStart(TimeElapsedColumn):
    """Time since the bar started, always: rich's own column freezes once a task is full
    (an iteration's steps all done while it judges) and stays frozen for the iterations after."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed
        if elapsed is None:
            return Text("-:--:--", style="progress.elapsed")
        return Text(str(timedelta(seconds=int(elapsed))), style="progress.elapsed")


def session_progress(console: Console) -> Progress:
    """The progress bar `policyforge run` shows while following a session (timesteps)."""
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
        _SinceStart(),
        console=console,
        transient=False,
    )


def progress_description(status: SessionStatus) -> str:
    """The progress bar's label: 'training   iteration 2/5  best 0.61'."""
    desc = f"{status.stage:<10} iteration {status.iteration}/{status.max_iterations}"
    if status.best_score is not None:
        desc += f"  best {status.best_score:.2f}"
    return desc


def training_now(status: SessionStatus) -> float:
    """Seconds of training so far, the run under way included."""
    return status.training_so_far(datetime.now(UTC))


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
    say(console, f"session {shown(session_id)}: {state}")
    if error is not None:
        say(console, f"  failed: {shown(error)}", soft_wrap=True)
    if status:
        best = f"{status.best_score:.2f}" if status.best_score is not None else "-"
        say(
            console,
            f"  stage {status.stage}, iteration {status.iteration}/{status.max_iterations}, "
            f"author {shown(status.model_label)}, best score {best}",
        )
        if status.unmeasured:
            say(console, Text.assemble("  not measured: ", literal(", ".join(status.unmeasured))))
        if status.stage in ("training", "evaluating", "judging"):
            say(console, f"  timesteps {status.timesteps_done:,} / {status.timesteps_target:,}")
        if status.waiting:
            say(console, f"  {shown(status.waiting)}")
        elif status.train_queue:
            say(console, f"  trains on queue {status.train_queue} ({status.accelerator} workers)")
        say(console, f"  {usage_line(status.llm_usage, training_now(status))}")
        if status.awaiting_approval is not None:
            say(
                console,
                f"  waiting for approval of iteration {status.awaiting_approval}: "
                f"policyforge approve {shown(session_id)}  (or --reject --note ...)",
            )
            for reward in status.pending_rewards:
                say(console, f"    {shown(reward.key)}  {shown(reward.latex)}")
        if status.feedback_pending:
            say(console, f"  feedback waiting for the next revision: {status.feedback_pending}")
        for error in status.signal_errors[-3:]:
            say(console, f"  {shown(error)}")
        if status.verdict:
            say(console, f"  verdict: {shown(status.verdict)}")
        for rec in status.iterations:
            say(
                console,
                f"  iter {rec.iteration}: {shown(record_verdict(rec))} (score {rec.score:.2f})  "
                f"{shown(rec.diagnosis)}",
            )
            for c in rec.criteria:
                say(console, f"    {shown(c.line()[2:])}")
            for line in run_lines(rec):
                say(console, f"    {line}")
    say(console, f"  {ui_link}")


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


def print_result(
    result: SessionResult,
    console: Console,
    *,
    as_json: bool,
    ui_link: str,
    dashboard_link: str | None = None,
    where: bool = True,
) -> None:
    """A finished session's result: as JSON on stdout for scripts, else the report for people
    (`where`: with where its files and pages are)."""
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    from activities.artifacts import bucket_name

    report(result, console, bucket_name(), ui_link, dashboard_link, where=where)


def _revision_note(rec: IterationRecord) -> str:
    """How the reviser got to this iteration's reward: what it changed, from which iteration,
    after looking at what (the reviser's words through `shown`)."""
    if not rec.changes:
        return ""
    note = f"\n(changed: {shown(rec.changes)}"
    if rec.based_on is not None and rec.based_on != rec.iteration - 1:
        note += f"; rebased on iteration {rec.based_on}"
    if rec.tools_used:
        note += f"; looked up {', '.join(shown(tool) for tool in rec.tools_used)}"
    return note + ")"


def run_lines(rec: IterationRecord) -> list[str]:
    """One line per run of an iteration that had several: candidate, config, seed, training
    return and score (none for a single run: its row says it all); for `say`."""
    if len(rec.run_results) < 2:
        return []
    how = "trained together" if rec.batched else "trained one process each"
    lines = [f"{len(rec.run_results)} runs, {how}:"]
    for r in rec.run_results:
        ret = "-" if r.mean_return is None else f"{r.mean_return:,.1f}"
        won = "  <- won" if r.candidate == rec.candidate and r.config == rec.config else ""
        config = shown(r.config)
        lines.append(
            f"c{r.candidate} {config} seed {r.seed}: return {ret}, score {r.score:.2f}{won}"
        )
    return lines


def _steps(rec: IterationRecord) -> str:
    """The budget, or "used of budget (stopped at pass at N%)" when a run stopped early."""
    if rec.stopped_at_pct is not None and rec.timesteps_used is not None:
        return f"{rec.timesteps_used:,} of {rec.timesteps:,} (passed at {rec.stopped_at_pct}%)"
    return f"{rec.timesteps:,}"


def report(
    result: SessionResult,
    console: Console,
    bucket: str,
    ui_link: str,
    dashboard_link: str | None = None,
    *,
    where: bool = True,
) -> None:
    """The final report: one table row per iteration, the verdict, spend, and where the best
    policy's files are (s3:// keys, a presigned video link when credentials allow), its pages
    in the Temporal UI and the dashboard, and how to watch the policy. Without `where`, none of
    that last part: for a caller whose services end with it (the demo says what stays)."""
    table = Table(title=Text(f"session {shown(result.session_id)}"), show_lines=False)
    for col in ("iter", "timesteps", "score", "passed", "diagnosis"):
        table.add_column(col, overflow="fold")
    for rec in result.iterations:
        table.add_row(
            str(rec.iteration),
            _steps(rec),
            f"{rec.score:.2f}",
            "yes" if rec.passed else "no",
            Text.assemble(literal(rec.diagnosis), _revision_note(rec)),
        )
    console.print(table)
    for rec in result.iterations:
        lines = run_lines(rec)
        if lines:
            say(console, f"  iter {rec.iteration} runs:")
            for line in lines:
                say(console, f"    {line}")
    verdict = {
        "passed": "[green]PASSED[/green]",
        "not_passed": "[yellow]NOT PASSED[/yellow]",
        "budget_exhausted": "[yellow]BUDGET EXHAUSTED[/yellow]",
        "aborted": "[yellow]ABORTED[/yellow]",
        "stopped": "[yellow]STOPPED[/yellow]",
    }[result.status]
    author = f"(author: {shown(result.model_label)})"
    if result.unmeasured:
        # Nobody should take a pass for the whole intent when words of it were not measured.
        verdict += " [yellow](partly expressed)[/yellow]"
        missing = ", ".join(result.unmeasured)
        say(console, Text.assemble("  not measured: ", literal(missing)))
    if result.note:
        say(console, Text.assemble(Text.from_markup(verdict), "  ", literal(result.note)))
    say(console, f"  {usage_line(result.llm_usage, result.training_seconds)}")
    if result.best is None or result.best_score is None:
        say(console, f"no iteration was judged  {author}")
        if where:
            _links(console, ui_link, dashboard_link)
        return
    best = result.best.best_run
    # Why it did not pass, by the numbers: the unmet criteria of the best iteration.
    why = record_verdict(result.best).removeprefix("not passed")
    say(
        console,
        Text.assemble(
            Text.from_markup(verdict),
            literal(why if not result.passed else ""),
            f"  best iteration {result.best_iteration}, score {result.best_score:.2f}  {author}",
        ),
    )
    if not where:
        return
    for label, key in (
        ("policy", best.model_key),
        ("normalizer", best.vecnormalize_key),
        ("video", best.video_key),
        ("trajectory", best.trajectory_key),
        ("reward", result.best.reward_key),
    ):
        if key:
            say(console, f"  {label:<11} s3://{bucket}/{shown(key)}")
    if best.video_key:
        try:
            from activities.artifacts import ArtifactStore

            link = ArtifactStore(bucket).presigned_url(best.video_key)
            say(console, f"  watch       {link}  (valid 1 h)")
        except Exception:  # noqa: BLE001 - no credentials here: the s3:// key above still works
            pass
    say(console, f"  play it    policyforge play {shown(result.session_id)}")
    _links(console, ui_link, dashboard_link)


def _links(console: Console, ui_link: str, dashboard_link: str | None) -> None:
    say(console, f"  Temporal UI {ui_link}")
    if dashboard_link:
        say(console, f"  dashboard   {dashboard_link}")
