"""Benchmark contracts: a suite of cases (from a CSV or a list), what each case's session
came to, and the aggregate by category, difficulty and env that the workflow returns, stores
as JSON in S3 and answers to its `status` query while it runs.

Parsing and checking the input are plain functions (workflow-safe): the workflow refuses bad
input at its start, and `policyforge bench` says the same before it starts anything.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Literal

from pydantic import Field, ValidationError

from workflows.contracts.context import Contract, UserInput, field_errors
from workflows.contracts.judging import CriterionScore
from workflows.contracts.queues import DEFAULT_QUEUE_PREFIX
from workflows.contracts.session import ENV_IDS, input_errors

CaseStatus = Literal[
    "pending", "running", "passed", "not_passed", "budget_exhausted", "aborted", "stopped", "failed"
]
# Session fields a case sets itself: not for the suite-wide `session` options.
PER_CASE = ("prompt", "env_id", "session_id", "queue_prefix")
# CSV header names (after trimming and lower-casing); `intent` is accepted for `instruction`,
# as the public case lists name it.
CSV_COLUMNS = ("env_id", "instruction", "category", "difficulty")
MAX_CASES = 500


class BenchmarkCase(UserInput):
    """One case of the suite: the intent, its env, and how it is grouped."""

    env_id: str
    instruction: str
    category: str = ""
    difficulty: str = ""


class BenchmarkInput(UserInput):
    """What a person starts a benchmark with: the cases (a list, or CSV text), how many
    sessions run at once, and the session options every case shares."""

    cases: list[BenchmarkCase] = Field(default_factory=list)
    csv: str | None = None
    max_parallel: int = 2
    # SessionInput fields applied to every case (llm_model, total_timesteps, max_iterations ...).
    session: dict[str, Any] = Field(default_factory=dict)
    benchmark_id: str | None = None
    queue_prefix: str = DEFAULT_QUEUE_PREFIX


class CaseResult(Contract):
    """What one case's session came to (so far)."""

    index: int
    env_id: str
    instruction: str
    category: str = ""
    difficulty: str = ""
    session_id: str
    status: CaseStatus = "pending"
    passed: bool = False
    best_score: float | None = None
    iterations: int = 0
    iterations_to_pass: int | None = None
    wall_seconds: float | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    model_label: str = ""
    error: str | None = None
    # Words of the intent no criterion measured: a pass is only partly expressed.
    unmeasured: list[str] = Field(default_factory=list)
    # The best iteration's verdict in words and each criterion as judged (measured value
    # against its target), so a table shows why a case did not pass.
    verdict: str = ""
    criteria: list[CriterionScore] = Field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.status not in ("pending", "running")


class GroupStats(Contract):
    """A group of cases (all, a category, a difficulty or an env): how many finished and
    passed, the pass rate over the finished, means and totals."""

    cases: int
    finished: int
    passed: int
    pass_rate: float | None  # passed / finished; None before any case finished
    mean_best_score: float | None
    mean_iterations_to_pass: float | None  # over the cases that passed
    mean_wall_seconds: float | None
    tokens: int
    cost_usd: float


class BenchmarkStatus(Contract):
    """The benchmark as it stands (stage "running"), and its result (stage "done")."""

    benchmark_id: str
    stage: Literal["running", "done"]
    settings: dict[str, Any] = Field(default_factory=dict)
    started_at: str
    finished_at: str | None = None
    wall_seconds: float | None = None
    cases: list[CaseResult]
    overall: GroupStats
    by_category: dict[str, GroupStats] = Field(default_factory=dict)
    by_difficulty: dict[str, GroupStats] = Field(default_factory=dict)
    by_env: dict[str, GroupStats] = Field(default_factory=dict)
    result_key: str | None = None


def parse_csv(text: str) -> list[BenchmarkCase]:
    """Cases from CSV text with a header row; ValueError with one line naming the row and
    field otherwise."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    rows = [row for row in reader if any(cell.strip() for cell in row)]
    if not rows:
        raise ValueError(
            "csv: is empty; give a header row env_id,instruction[,category,difficulty]"
        )
    header = [{"intent": "instruction"}.get(h.strip().lower(), h.strip().lower()) for h in rows[0]]
    missing = [c for c in ("env_id", "instruction") if c not in header]
    if missing:
        raise ValueError(
            f"csv: the header has no {' or '.join(missing)} column (it reads {','.join(header)}); "
            "use env_id,instruction,category,difficulty"
        )
    cases = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) > len(header):
            raise ValueError(f"csv row {number}: {len(row)} cells for {len(header)} columns")
        fields = {h: cell.strip() for h, cell in zip(header, row, strict=False) if h in CSV_COLUMNS}
        cases.append((number, fields))
    out = []
    for number, fields in cases:
        errors = case_errors(fields.get("env_id", ""), fields.get("instruction", ""))
        if errors:
            raise ValueError(f"csv row {number}: {errors[0]}")
        out.append(BenchmarkCase(**fields))
    return out


def case_errors(env_id: str, instruction: str) -> list[str]:
    """What is wrong with one case (empty: nothing)."""
    errors = []
    if env_id not in ENV_IDS:
        errors.append(f"env_id: unknown environment {env_id!r}; choose one of {', '.join(ENV_IDS)}")
    if not instruction.strip():
        errors.append("instruction: is empty; describe the behaviour")
    return errors


def suite(inp: BenchmarkInput) -> list[BenchmarkCase]:
    """The benchmark's cases (the list, then the CSV's); ValueError with one line when the
    input cannot run."""
    errors = benchmark_errors(inp)
    if errors:
        raise ValueError(errors[0])
    return list(inp.cases) + (parse_csv(inp.csv) if inp.csv else [])


def raw_input_errors(raw: dict[str, Any]) -> list[str]:
    """Everything wrong with a benchmark's raw input (as `temporal workflow start` sends it),
    one line each, naming the field: unknown fields and wrong types first, then the suite."""
    try:
        inp = BenchmarkInput.model_validate(raw)
    except ValidationError as exc:
        return field_errors(exc, "BenchmarkInput, workflows/contracts/benchmark.py")
    return benchmark_errors(inp)


def benchmark_errors(inp: BenchmarkInput) -> list[str]:
    """Everything wrong with a benchmark's input, one line each, naming the field."""
    errors = []
    cases = list(inp.cases)
    if inp.csv:
        try:
            cases += parse_csv(inp.csv)
        except ValueError as exc:
            errors.append(str(exc))
    for number, case in enumerate(inp.cases, start=1):
        errors += [f"cases[{number}].{e}" for e in case_errors(case.env_id, case.instruction)]
    if not cases and not errors:
        errors.append("cases: the suite is empty; give cases or csv")
    if len(cases) > MAX_CASES:
        errors.append(f"cases: {len(cases)} cases; at most {MAX_CASES} per benchmark")
    if inp.max_parallel < 1:
        errors.append(f"max_parallel: must be at least 1 (got {inp.max_parallel})")
    for field in PER_CASE:
        if field in inp.session:
            errors.append(f"session.{field}: set per case (or by the benchmark); remove it")
    options = {k: v for k, v in inp.session.items() if k not in PER_CASE}
    errors += [
        f"session.{e}" for e in input_errors({**options, "prompt": "x", "env_id": ENV_IDS[0]})
    ]
    return errors
