"""`BenchmarkWorkflow`: a suite of intents, each run as a child `SessionWorkflow`, at most
`max_parallel` at once, aggregated into pass rates, scores, iterations to pass, wall time,
tokens and cost (overall, by category, by difficulty, by env).

The aggregate is live (the `status` query answers it while cases run) and, once every case
ended, stored as JSON in S3 (benchmarks/<id>/result.json) by an activity. A case whose session
fails is a case with status "failed" and its one-line reason; the benchmark still finishes.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from workflows import benchmark_stats
    from workflows.contracts import activities as act
    from workflows.contracts import timeouts
    from workflows.contracts.benchmark import (
        BenchmarkCase,
        BenchmarkInput,
        BenchmarkStatus,
        CaseResult,
        raw_input_errors,
        suite,
    )
    from workflows.contracts.context import OFFLINE_LABEL, is_offline
    from workflows.contracts.queues import task_queue
    from workflows.contracts.session import SessionInput, SessionResult
    from workflows.step_base import failure_line

STORE_RETRY = RetryPolicy(maximum_attempts=10, maximum_interval=timedelta(seconds=30))


def case_result(case: BenchmarkCase, index: int, session_id: str) -> CaseResult:
    """A case not started yet."""
    return CaseResult(index=index, session_id=session_id, **case.model_dump())


def ended(result: CaseResult, session: SessionResult, wall: float) -> CaseResult:
    """A case whose session returned."""
    usage = session.llm_usage
    to_pass = next((r.iteration for r in session.iterations if r.passed), None)
    return result.model_copy(
        update={
            "status": session.status,
            "passed": session.passed,
            "best_score": session.best_score,
            "iterations": len(session.iterations),
            "iterations_to_pass": to_pass,
            "wall_seconds": round(wall, 2),
            "tokens": usage.input_tokens + usage.output_tokens,
            "cost_usd": usage.cost_usd,
            "model_label": session.model_label,
            "unmeasured": list(session.unmeasured),
            "verdict": session.verdict,
            "criteria": list(session.best.criteria) if session.best else [],
            "error": session.note if session.status in ("budget_exhausted", "stopped") else None,
        }
    )


@workflow.defn
class BenchmarkWorkflow:
    """Run a suite of cases as child sessions and aggregate what they came to."""

    def __init__(self) -> None:
        self._status: BenchmarkStatus | None = None

    @workflow.query
    def status(self) -> BenchmarkStatus | None:
        """The aggregate so far (None before the input was read)."""
        return self._status

    @workflow.run
    async def run(self, raw_input: dict[str, Any]) -> BenchmarkStatus:
        # A plain dict, as for sessions: bad input is a one-line, non-retryable error naming
        # the field, not a workflow task that fails to decode forever.
        errors = raw_input_errors(raw_input)
        if errors:
            raise ApplicationError(errors[0], type="BadBenchmarkInput", non_retryable=True)
        inp = BenchmarkInput.model_validate(raw_input)
        cases = suite(inp)
        bid = inp.benchmark_id or workflow.info().workflow_id
        started = workflow.now()
        model = inp.session.get("llm_model") or SessionInput.model_fields["llm_model"].default
        settings = {
            "model": OFFLINE_LABEL if is_offline(model) else model,
            **{k: v for k, v in sorted(inp.session.items()) if k != "llm_model"},
            "max_parallel": inp.max_parallel,
        }
        results = [case_result(c, i, f"{bid}-{i}") for i, c in enumerate(cases, start=1)]
        self._publish(bid, settings, started.isoformat(), results)
        gate = asyncio.Semaphore(inp.max_parallel)

        async def one(position: int) -> None:
            async with gate:
                results[position] = results[position].model_copy(update={"status": "running"})
                self._publish(bid, settings, started.isoformat(), results)
                results[position] = await self._run_case(inp, results[position])
                self._publish(bid, settings, started.isoformat(), results)

        await asyncio.gather(*(one(p) for p in range(len(results))))
        finished = workflow.now()
        done = self._publish(
            bid,
            settings,
            started.isoformat(),
            results,
            finished_at=finished.isoformat(),
            wall_seconds=round((finished - started).total_seconds(), 2),
        )
        deadline = timeouts.for_activity(act.STORE_BENCHMARK.name)
        key: str = await workflow.execute_activity(
            act.STORE_BENCHMARK.name,
            done,
            result_type=act.STORE_BENCHMARK.result,
            task_queue=task_queue(act.STORE_BENCHMARK.pool, inp.queue_prefix),
            summary=act.STORE_BENCHMARK.summary,
            start_to_close_timeout=deadline.start_to_close,
            retry_policy=STORE_RETRY,
        )
        self._status = done.model_copy(update={"result_key": key})
        return self._status

    async def _run_case(self, inp: BenchmarkInput, result: CaseResult) -> CaseResult:
        """One case's session, start to end; a failed session is a failed case."""
        memo = dict(workflow.memo())  # the dashboard's address, when the starter gave it
        memo["prompt"] = result.instruction
        session = SessionInput(
            **inp.session,
            prompt=result.instruction,
            env_id=result.env_id,
            session_id=result.session_id,
            queue_prefix=inp.queue_prefix,
        )
        begun = workflow.now()
        try:
            outcome: SessionResult = await workflow.execute_child_workflow(
                "SessionWorkflow",
                session,
                result_type=SessionResult,
                id=result.session_id,
                task_queue=task_queue("llm", inp.queue_prefix),
                memo=memo,
                static_summary=f"benchmark case {result.index}: {result.instruction}",
            )
        except ChildWorkflowError as exc:
            wall = (workflow.now() - begun).total_seconds()
            return result.model_copy(
                update={
                    "status": "failed",
                    "wall_seconds": round(wall, 2),
                    "error": failure_line(exc),
                }
            )
        return ended(result, outcome, (workflow.now() - begun).total_seconds())

    def _publish(
        self,
        bid: str,
        settings: dict,
        started_at: str,
        results: list[CaseResult],
        finished_at: str | None = None,
        wall_seconds: float | None = None,
    ) -> BenchmarkStatus:
        """The aggregate as it stands: what the status query answers."""
        self._status = BenchmarkStatus(
            benchmark_id=bid,
            stage="done" if finished_at else "running",
            settings=settings,
            started_at=started_at,
            finished_at=finished_at,
            wall_seconds=wall_seconds,
            cases=list(results),
            overall=benchmark_stats.stats(results),
            by_category=benchmark_stats.by(results, lambda c: c.category),
            by_difficulty=benchmark_stats.by(results, lambda c: c.difficulty),
            by_env=benchmark_stats.by(results, lambda c: c.env_id),
        )
        return self._status
