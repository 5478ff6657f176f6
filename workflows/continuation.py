"""Continue-as-new between iterations: what a session carries into its next workflow run, so
that long sessions stay within Temporal's history limits. A mixin of `SessionWorkflow`."""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.accounting import Accounting
    from workflows.contracts.judging import Criterion, JudgeCode, VisualCriteria
    from workflows.contracts.session import (
        IterationEvidence,
        IterationRecord,
        RunRecord,
        SessionCarry,
        SessionInput,
        SessionStatus,
    )


class Continuation:
    # Set by SessionWorkflow and Steering.
    _status: SessionStatus | None
    _accounting: Accounting | None
    _evidence: dict[int, IterationEvidence]
    _best_run: RunRecord | None
    _visual_criteria: VisualCriteria | None
    _runs: int
    _extra_iterations: int
    _feedback: list[str]
    _signal_errors: list[str]
    _stage: Callable[..., None]  # SessionWorkflow._stage: status, details, search attributes
    _take_feedback: Callable[[], list[str]]

    def _time_to_continue(self, inp: SessionInput, iterations_here: int) -> bool:
        """Between iterations: has this run's history grown enough for a fresh one?"""
        return (
            iterations_here >= inp.iterations_per_run
            or workflow.info().is_continue_as_new_suggested()
        )

    def _carry(
        self,
        records: list[IterationRecord],
        criteria: list[Criterion],
        judge: JudgeCode | None,
        configs: list[str],
    ) -> SessionCarry:
        """The state the records do not hold already (the iteration count, the last budget
        and the best run are read back from the records)."""
        assert self._accounting is not None
        top = max(records, key=lambda r: r.score)
        keep = sorted({records[-1].iteration, top.iteration})
        self._stage("continuing")
        return SessionCarry(
            records=list(records),
            criteria=criteria,
            judge=judge,
            visual_criteria=self._visual_criteria,
            evidence=[self._evidence[i] for i in keep],
            configs=configs,
            llm_usage=self._accounting.session,
            training_seconds=self._accounting.training_seconds,
            extra_iterations=self._extra_iterations,
            feedback=self._take_feedback(),
            signal_errors=list(self._signal_errors),
            runs=self._runs + 1,
        )

    def _restore(self, carry: SessionCarry) -> list[IterationRecord]:
        """Take over the session from the run before this one; its records."""
        assert self._status is not None and self._accounting is not None
        self._runs = carry.runs
        self._visual_criteria = carry.visual_criteria
        self._evidence = {e.iteration: e for e in carry.evidence}
        # The warm start's base: the best run so far, the later one on a tie (as Runs keeps it).
        self._best_run = max(reversed(carry.records), key=lambda r: r.score).best_run
        self._accounting.session = carry.llm_usage
        self._accounting.training_seconds = carry.training_seconds
        self._extra_iterations = carry.extra_iterations
        self._feedback = list(carry.feedback) + self._feedback
        self._signal_errors = list(carry.signal_errors)
        best = max(carry.records, key=lambda r: r.score)
        self._stage(
            "starting",
            iteration=carry.records[-1].iteration,
            criteria=carry.criteria,
            iterations=list(carry.records),
            best_score=best.score,
            best_iteration=best.iteration,
            runs=carry.runs,
        )
        return list(carry.records)
