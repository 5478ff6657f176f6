"""`policyforge bench CASES.csv`: start a `BenchmarkWorkflow`, follow it, print its table.

The input is checked here exactly as the workflow checks it (workflows/contracts/benchmark.py),
so a bad CSV or option ends the command with one line before anything starts.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import uuid
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle

from workers.cli.input_checks import exit_on, model_errors
from workers.cli.render import literal, say
from workers.cli.sessions import failure_reason
from workers.client import connect
from workers.settings import Settings
from workflows.benchmark import BenchmarkWorkflow
from workflows.contracts.benchmark import BenchmarkInput, BenchmarkStatus, GroupStats, suite
from workflows.contracts.queues import task_queue
from workflows.contracts.shown import shown


def benchmark_id_for(name: str) -> str:
    """A readable, unique id from the CSV's name: 'bench-dev-intents-1a2b3c4d'."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:32].strip("-")
    return f"bench-{slug or 'cases'}-{uuid.uuid4().hex[:8]}"


def benchmark_input(args: argparse.Namespace, options: dict[str, Any]) -> BenchmarkInput:
    """The workflow's input from the command line; SystemExit with one line when it is bad."""
    path = args.cases_csv
    if not path.is_file():
        raise SystemExit(f"error: {path}: no such file; give a CSV of cases")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"error: {path}: cannot be read ({exc})") from None
    settings = Settings()
    inp = BenchmarkInput(
        csv=text,
        max_parallel=args.max_parallel,
        session=options,
        benchmark_id=args.benchmark_id or benchmark_id_for(path.stem),
        queue_prefix=settings.queue_prefix,
    )
    try:
        suite(inp)
    except ValueError as exc:
        raise SystemExit(f"error: {path}: {exc}") from None
    if options.get("llm_model"):
        exit_on(model_errors(options["llm_model"]))
    return inp


def cmd_bench(args: argparse.Namespace, options: dict[str, Any]) -> None:
    """Start the benchmark; unless detached, follow it and print its table."""
    inp = benchmark_input(args, options)
    asyncio.run(_start_and_follow(inp, args.detach, args.json))


async def _start_and_follow(inp: BenchmarkInput, detach: bool, as_json: bool) -> None:
    settings = Settings()
    console = Console(stderr=as_json, soft_wrap=True)
    client = await connect(settings)
    assert inp.benchmark_id is not None
    bid = inp.benchmark_id
    handle = await client.start_workflow(
        "BenchmarkWorkflow",
        inp,
        id=bid,
        task_queue=task_queue("llm", inp.queue_prefix),
        result_type=BenchmarkStatus,
        memo={"dashboard_url": settings.dashboard_url},
    )
    ui_link = settings.ui_link(bid, client.namespace)
    console.print(f"benchmark {bid} started  ({ui_link})")
    console.print(f"  dashboard: {settings.dashboard_url}/benchmarks/{bid}")
    if detach:
        console.print(f"its result: the dashboard, or `temporal workflow show --workflow-id {bid}`")
        return
    try:
        result = await _follow(handle, console)
    except WorkflowFailureError as exc:
        raise SystemExit(f"error: benchmark {bid} failed: {failure_reason(exc)}") from None
    if as_json:
        print(result.model_dump_json(indent=1))
    else:
        print_table(result, console)


async def _follow(
    handle: WorkflowHandle[Any, BenchmarkStatus], console: Console
) -> BenchmarkStatus:
    """Cases finished and passed, live, until the benchmark ends; its result."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task("starting", total=None)
    last = ""
    with progress:
        while True:
            described = await handle.describe()
            if described.status != WorkflowExecutionStatus.RUNNING:
                break
            try:
                status = await handle.query(BenchmarkWorkflow.status)
            except Exception:  # noqa: BLE001 - no worker has answered yet
                status = None
            if status is not None:
                o = status.overall
                running = sum(c.status == "running" for c in status.cases)
                text = f"{o.finished}/{o.cases} cases done, {o.passed} passed, {running} running"
                progress.update(task, description=text, completed=o.finished, total=o.cases)
                if text != last and not console.is_terminal:
                    console.print(f"  {text}")
                last = text
            await asyncio.sleep(2)
    return await handle.result()


def _cells(s: GroupStats) -> list[str]:
    def num(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    return [
        f"{s.finished}/{s.cases}",
        str(s.passed),
        "-" if s.pass_rate is None else f"{100 * s.pass_rate:.0f}%",
        num(s.mean_best_score, ".2f"),
        num(s.mean_iterations_to_pass, ".1f"),
        "-" if s.mean_wall_seconds is None else f"{s.mean_wall_seconds:.0f} s",
        f"{s.tokens:,}",
        f"${s.cost_usd:.4f}",
    ]


def print_table(result: BenchmarkStatus, console: Console) -> None:
    """The pass-rate table (overall, by category, difficulty, env), the cases, the JSON key."""
    table = Table(title=f"benchmark {result.benchmark_id}")
    for column in ("group", "", "finished", "passed", "pass rate", "mean best", "iters to pass"):
        table.add_column(column)
    for column in ("mean wall", "tokens", "cost"):
        table.add_column(column, justify="right")
    table.add_row("overall", "all cases", *_cells(result.overall))
    for group, stats in (
        ("category", result.by_category),
        ("difficulty", result.by_difficulty),
        ("env", result.by_env),
    ):
        for name, s in stats.items():
            table.add_row(group, literal(name or "-"), *_cells(s))
    console.print(table)
    cases = Table(title="cases")
    for column in ("#", "env", "instruction", "status", "best", "iterations", "wall", "verdict"):
        cases.add_column(column, overflow="fold")
    for c in result.cases:
        cases.add_row(
            str(c.index),
            c.env_id,
            literal(c.instruction),
            c.status.replace("_", " "),
            "-" if c.best_score is None else f"{c.best_score:.2f}",
            str(c.iterations),
            "-" if c.wall_seconds is None else f"{c.wall_seconds:.0f} s",
            literal(c.verdict or "-"),
        )
    console.print(cases)
    for c in result.cases:
        if c.error:
            say(console, f"case {c.index}: {shown(c.error)}")
    settings = ", ".join(f"{k} {shown(v)}" for k, v in result.settings.items())
    say(console, f"settings: {settings}; wall {result.wall_seconds or 0:.0f} s")
    if result.result_key:
        console.print(f"result JSON: s3://{_bucket()}/{result.result_key}")


def _bucket() -> str:
    from activities.artifacts import bucket_name

    return bucket_name()
