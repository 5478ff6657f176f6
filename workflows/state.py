"""What a session knows while it runs: one object, owned by `SessionWorkflow`.

The status people query, the records, the criteria and judge, the evidence the reviser starts
from, the best run (where a warm start begins), the spend, and what people sent (`Steering`).
Every stage change goes through `SessionState.stage`, which also keeps the Web UI's details and
the search attributes current. `carry` and `restore` move the state across continue-as-new, so
long sessions stay within Temporal's history limits.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows import search
    from workflows.accounting import Accounting
    from workflows.contracts.context import OFFLINE_LABEL, is_offline
    from workflows.contracts.judging import Criterion, JudgeCode, VisualCriteria
    from workflows.contracts.queues import train_queue
    from workflows.contracts.session import (
        IterationEvidence,
        IterationRecord,
        RunRecord,
        SessionCarry,
        SessionInput,
        SessionStatus,
        Stage,
    )
    from workflows.contracts.training import CONFIG_NAMES
    from workflows.details import details_markdown
    from workflows.steering import Steering
    from workflows.verdict import record_verdict


class SessionState:
    """One session's state; the run loop, the fan-out and the handlers all read and change it."""

    def __init__(self, inp: SessionInput, session_id: str, steering: Steering) -> None:
        self.inp = inp
        self.session_id = session_id
        self.steering = steering
        self.offline = is_offline(inp.llm_model)
        self.accounting = Accounting(inp)
        self.status = SessionStatus(
            session_id=session_id,
            prompt=inp.prompt,
            env_id=inp.env_id,
            model_label=OFFLINE_LABEL if self.offline else inp.llm_model,
            stage="starting",
            iteration=0,
            max_iterations=inp.max_iterations,
            timesteps_done=0,
            timesteps_target=inp.total_timesteps,
            best_score=None,
            best_iteration=None,
            approval=inp.approval,
            accelerator=inp.accelerator,
            train_queue=None
            if inp.accelerator == "any"
            else train_queue(inp.accelerator, inp.queue_prefix),
        )
        # The iteration under way (0 before the first), its budget and the configs it trains.
        self.iteration = 0
        self.timesteps = inp.total_timesteps
        self.configs = list(CONFIG_NAMES[: inp.configs])
        self.records: list[IterationRecord] = []
        self.criteria: list[Criterion] = []
        self.judge: JudgeCode | None = None
        self.visual_criteria: VisualCriteria | None = None
        # Each iteration's winning candidate with its evidence: what the reviser starts from.
        self.evidence: dict[int, IterationEvidence] = {}
        # The best run of the session so far: where a warm start begins.
        self.best_run: RunRecord | None = None
        self.runs = 1  # workflow runs of this session (continue-as-new starts another)
        self._search_values: tuple = ()

    @property
    def max_iterations(self) -> int:
        """The session's limit, raised by `extend` while it runs."""
        return self.inp.max_iterations + self.steering.extra_iterations

    def best(self) -> IterationRecord:
        """The best iteration so far: a passing one before any score (the earlier on a tie)."""
        return max(self.records, key=lambda r: (r.passed, r.score))

    def _taken(self) -> dict[str, Any]:
        """What people sent and what the session spent, as they are now."""
        return {
            "llm_usage": self.accounting.session,
            "training_seconds": round(self.accounting.training_seconds, 2),
            "training_since": min(self.accounting.training_started, default=None),
            "training_began": sorted(self.accounting.training_started),
            "max_iterations": self.max_iterations,
            "awaiting_approval": self.steering.awaiting_approval,
            "feedback_pending": len(self.steering.feedback),
            "signal_errors": list(self.steering.signal_errors),
        }

    def live_status(self) -> SessionStatus:
        """The status as a query answers it: the stage's, with what people sent and what was
        spent as they are now (feedback, extensions and ignored signals show at once, not at
        the next stage). Read-only: a query changes nothing."""
        return self.status.model_copy(update=self._taken())

    def stage(self, stage: Stage, **changes: Any) -> None:
        """Enter a stage: the status (with the spend and what people sent), the Web UI's
        details and the search attributes follow."""
        for key, value in self._taken().items():
            changes.setdefault(key, value)
        self.status = self.status.model_copy(update={"stage": stage, **changes})
        workflow.set_current_details(details_markdown(self.status, self.dashboard_link()))
        self._publish_search_attributes()

    def dashboard_link(self) -> str | None:
        """This session's page in the dashboard, when whoever started it said where that is
        (memo `dashboard_url`, set by the CLI and the benchmark; start-time data, replay-safe)."""
        base = workflow.memo_value("dashboard_url", None, type_hint=str)
        return f"{base.rstrip('/')}/sessions/{self.session_id}" if base else None

    def _publish_search_attributes(self) -> None:
        """Upsert the search attributes when they changed (each upsert is a history event)."""
        status = self.status
        if not self.inp.search_attributes:
            return
        passed = any(r.passed for r in status.iterations)
        model = status.model_label if workflow.patched(search.MODEL_PATCH) else None
        current = search.values(
            status.stage, status.env_id, status.iteration, status.best_score, passed, model
        )
        if current != self._search_values:
            self._search_values = current
            workflow.upsert_search_attributes(search.updates(current))

    # --- continue-as-new ----------------------------------------------------------------------

    def continue_due(self, iterations_here: int) -> bool:
        """Between iterations: has this run's history grown enough for a fresh one?"""
        return (
            iterations_here >= self.inp.iterations_per_run
            or workflow.info().is_continue_as_new_suggested()
        )

    def carry(self) -> SessionCarry:
        """What the next run takes over that the records do not hold already (the iteration
        count, the last budget and the best run are read back from the records)."""
        keep = sorted({self.records[-1].iteration, self.best().iteration})
        self.stage("continuing")
        return SessionCarry(
            records=list(self.records),
            criteria=self.criteria,
            judge=self.judge,
            visual_criteria=self.visual_criteria,
            evidence=[self.evidence[i] for i in keep],
            configs=self.configs,
            llm_usage=self.accounting.session,
            training_seconds=self.accounting.training_seconds,
            extra_iterations=self.steering.extra_iterations,
            feedback=self.steering.take_feedback(),
            signal_errors=list(self.steering.signal_errors),
            runs=self.runs + 1,
        )

    def restore(self, carry: SessionCarry) -> None:
        """Take over the session from the run before this one."""
        last = carry.records[-1]
        self.records = list(carry.records)
        self.criteria, self.judge, self.configs = carry.criteria, carry.judge, list(carry.configs)
        self.iteration, self.timesteps = last.iteration, last.timesteps
        self.runs = carry.runs
        self.visual_criteria = carry.visual_criteria
        self.evidence = {e.iteration: e for e in carry.evidence}
        # The warm start's base: the best run so far, the later one on a tie (as the fan-out
        # keeps it).
        self.best_run = max(reversed(carry.records), key=lambda r: (r.passed, r.score)).best_run
        self.accounting.session = carry.llm_usage
        self.accounting.training_seconds = carry.training_seconds
        steering = self.steering
        steering.extra_iterations = carry.extra_iterations
        steering.feedback = list(carry.feedback) + steering.feedback
        steering.signal_errors = list(carry.signal_errors)
        best = self.best()
        self.stage(
            "starting",
            iteration=last.iteration,
            criteria=carry.criteria,
            iterations=list(carry.records),
            best_score=best.score,
            best_iteration=best.iteration,
            verdict=record_verdict(best),
            runs=carry.runs,
        )
