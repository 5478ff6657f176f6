"""SessionWorkflow: one prompt-to-policy session.

elicit criteria -> author K reward candidates and the judge -> per iteration: review, validate
and fix, train candidates x seeds in parallel, evaluate, judge -> pass, or revise and go on.
The history holds ids, S3 keys, scores, accounting and short text only; the activity calls
themselves live in `workflows/steps.py`.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows import search
    from workflows.accounting import Accounting, BudgetExhausted
    from workflows.continuation import Continuation
    from workflows.contracts.context import OFFLINE_LABEL, is_offline
    from workflows.contracts.judging import Criterion, JudgeCode, VisualCriteria
    from workflows.contracts.llm import (
        AuthorRequest,
        AuthorResult,
        ElicitRequest,
        ElicitResult,
        JudgeAuthorRequest,
        ReviewRequest,
        ReviewResult,
        ReviseRequest,
        VisualCriteriaRequest,
    )
    from workflows.contracts.session import (
        IterationEvidence,
        IterationRecord,
        RunRecord,
        SessionCarry,
        SessionInput,
        SessionResult,
        SessionStatus,
        Stage,
        input_errors,
    )
    from workflows.contracts.steering import ApprovalDecision
    from workflows.contracts.training import CONFIG_NAMES, RewardArtifact
    from workflows.details import details_markdown
    from workflows.runs import Runs
    from workflows.steering import Steering
    from workflows.steps import Steps


@workflow.defn
class SessionWorkflow(Runs, Continuation, Steering):
    def __init__(self) -> None:
        super().__init__()
        self._max_iterations = 0
        self._search_enabled = False
        self._search_values: tuple = ()
        self._status: SessionStatus | None = None
        self._accounting: Accounting | None = None
        # Each iteration's winning candidate with its evidence: what the reviser starts from.
        self._evidence: dict[int, IterationEvidence] = {}
        self._visual_criteria: VisualCriteria | None = None
        # The best run of the session so far: where a warm start begins.
        self._best_run: RunRecord | None = None
        self._runs = 1  # workflow runs of this session (continue-as-new starts another)

    @workflow.query
    def status(self) -> SessionStatus | None:
        return self._status

    def _stage(self, stage: Stage, **changes: Any) -> None:
        assert self._status is not None
        if self._accounting is not None:
            changes.setdefault("llm_usage", self._accounting.session)
            changes.setdefault("training_seconds", round(self._accounting.training_seconds, 2))
        changes.setdefault("max_iterations", self._max_iterations + self._extra_iterations)
        changes.setdefault("awaiting_approval", self._awaiting_approval)
        changes.setdefault("feedback_pending", len(self._feedback))
        changes.setdefault("signal_errors", list(self._signal_errors))
        self._status = self._status.model_copy(update={"stage": stage, **changes})
        workflow.set_current_details(details_markdown(self._status))
        self._publish_search_attributes()

    def _publish_search_attributes(self) -> None:
        """Upsert the search attributes when they changed (each upsert is a history event)."""
        status = self._status
        if not self._search_enabled or status is None:
            return
        passed = any(r.passed for r in status.iterations)
        current = search.values(
            status.stage, status.env_id, status.iteration, status.best_score, passed
        )
        if current != self._search_values:
            self._search_values = current
            workflow.upsert_search_attributes(search.updates(current))

    @workflow.run
    async def run(
        self, raw_input: dict[str, Any], carry: SessionCarry | None = None
    ) -> SessionResult:
        # The input arrives as a plain dict so that bad input becomes a one-line, non-retryable
        # error naming the field, instead of a workflow task that fails to decode forever.
        errors = input_errors(raw_input)
        if errors:
            raise ApplicationError("; ".join(errors), type="InvalidInput", non_retryable=True)
        inp = SessionInput.model_validate(raw_input)
        session_id = inp.session_id or workflow.info().workflow_id
        self._status = SessionStatus(
            session_id=session_id,
            prompt=inp.prompt,
            env_id=inp.env_id,
            model_label=OFFLINE_LABEL if is_offline(inp.llm_model) else inp.llm_model,
            stage="starting",
            iteration=0,
            max_iterations=inp.max_iterations,
            timesteps_done=0,
            timesteps_target=inp.total_timesteps,
            best_score=None,
            best_iteration=None,
            approval=inp.approval,
        )
        self._max_iterations = inp.max_iterations
        self._search_enabled = inp.search_attributes
        self._accounting = Accounting(inp)
        steps = Steps(inp, session_id, is_offline(inp.llm_model), self._accounting, self._stage)
        records: list[IterationRecord] = []
        if carry is None:
            workflow.logger.info("session started", extra={"session_id": session_id})
        else:
            records = self._restore(carry)
            workflow.logger.info(
                "session continued as new",
                extra={"session_id": session_id, "iterations_done": len(records)},
            )

        note: str | None = None
        main = asyncio.create_task(self._iterate(inp, session_id, steps, records, carry))
        # An abort (update or signal) cancels the loop and its running activities.
        await workflow.wait_condition(lambda: main.done() or self._abort_reason is not None)
        if not main.done():
            main.cancel()
        try:
            onward = await main
            if onward is not None and self._abort_reason is None:
                # A fresh history for the next iterations; updates in flight finish first.
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(args=[raw_input, onward])
        except BudgetExhausted as exc:
            note = str(exc)
            workflow.logger.info("budget exhausted", extra={"session_id": session_id})
        except (asyncio.CancelledError, ActivityError):
            # Cancelled activities surface as either, depending on where the loop was waiting.
            if self._abort_reason is None:
                raise
        if self._abort_reason is not None:
            note = f"aborted: {self._abort_reason}"
        self._ended = True
        return self._result(session_id, records, note, aborted=self._abort_reason is not None)

    async def _iterate(
        self,
        inp: SessionInput,
        session_id: str,
        steps: Steps,
        records: list[IterationRecord],
        carry: SessionCarry | None,
    ) -> SessionCarry | None:
        """The iterations; returns what the next run takes over when this run's history is
        long enough to continue as new, else None (passed or out of iterations)."""
        acc = steps.accounting
        k_all = range(inp.candidates)
        if carry is None:
            criteria, rewards, judge = await self._author(inp, session_id, steps)
            iteration, timesteps = 0, inp.total_timesteps
            configs = list(CONFIG_NAMES[: inp.configs])
        else:
            criteria, rewards, judge = carry.criteria, [], carry.judge
            iteration, timesteps = carry.records[-1].iteration, carry.records[-1].timesteps
            configs = list(carry.configs)
        started_at = iteration
        changes: str | None = None
        based_on: int | None = None
        tools_used: list[str] = []
        heard: list[str] = []
        review_notes: str | None = None
        # extend() raises the limit while the session runs.
        while iteration < inp.max_iterations + self._extra_iterations:
            if iteration > started_at and self._time_to_continue(inp, iteration - started_at):
                return self._carry(records, criteria, judge, configs)
            iteration += 1
            if iteration > 1:
                acc.new_iteration()
                # Revise from the last iteration's winner; the reviser sees the whole history
                # and may rebase on the best earlier iteration instead.
                self._stage("revising", iteration=iteration)
                feedback = self._take_feedback()
                revised = await asyncio.gather(
                    *(
                        steps.revise(
                            self._revise_request(
                                inp,
                                session_id,
                                iteration,
                                criteria,
                                timesteps,
                                k,
                                feedback,
                                records,
                            )
                        )
                        for k in k_all
                    )
                )
                rewards = [r.reward for r, _ in revised]  # type: ignore[misc]
                first, tools_used = revised[0]
                changes = first.changes
                based_on, heard = first.base_iteration, feedback
                timesteps = min(max(first.timesteps, 1), inp.timesteps_cap)
                if first.config is not None and inp.algo == "ppo":
                    # The reviser's config first, then the session's others.
                    configs = [first.config] + [c for c in configs if c != first.config]
                    configs = configs[: inp.configs]
                acc.check()

            if not steps.offline:
                self._stage("reviewing", iteration=iteration)
                reviews = await asyncio.gather(
                    *(
                        steps.llm(
                            "review_reward",
                            ReviewRequest(
                                session_id=session_id,
                                iteration=iteration,
                                candidate=k,
                                prompt=inp.prompt,
                                env_id=inp.env_id,
                                llm_model=inp.llm_model,
                                reward=rewards[k],
                                criteria=criteria,
                            ),
                            ReviewResult,
                        )
                        for k in k_all
                    )
                )
                rewards = [r.reward for r in reviews]
                review_notes = "; ".join(r.notes for r in reviews if not r.lgtm) or None
                acc.check()

            self._stage(
                "validating", iteration=iteration, timesteps_done=0, timesteps_target=timesteps
            )
            rewards = list(
                await asyncio.gather(
                    *(steps.valid_reward(iteration, k, rewards[k], criteria) for k in k_all)
                )
            )
            if judge is not None and iteration == 1:  # once; later runs carry it validated
                judge = await steps.valid_judge(judge, rewards[0].key, criteria)
            acc.check()
            if inp.approval == "every" or (inp.approval == "first" and iteration == 1):
                await self._approval_gate(inp, iteration, rewards)

            record = await self._train_and_judge(
                inp, steps, iteration, rewards, criteria, timesteps, judge, configs
            )
            record = record.model_copy(
                update={
                    "changes": changes,
                    "based_on": based_on,
                    "tools_used": tools_used,
                    "feedback": heard,
                    "review_notes": review_notes,
                    "llm_usage": acc.iteration,
                    "training_seconds": round(acc.iteration_training_seconds, 2),
                }
            )
            records.append(record)
            best = max(records, key=lambda r: r.score)
            self._stage(
                "judging",
                iterations=list(records),
                best_score=best.score,
                best_iteration=best.iteration,
            )
            workflow.logger.info(
                "iteration judged",
                extra={"session_id": session_id, "iteration": iteration, "score": record.score},
            )
            if record.passed:
                return None
            acc.check()
        return None

    async def _author(
        self, inp: SessionInput, session_id: str, steps: Steps
    ) -> tuple[list[Criterion], list[RewardArtifact], JudgeCode | None]:
        """Criteria, K reward candidates, the judge code and the visual criteria."""
        acc = steps.accounting
        k_all = range(inp.candidates)
        self._stage("eliciting", iteration=1)
        elicited = await steps.llm(
            "elicit_criteria",
            ElicitRequest(
                session_id=session_id,
                prompt=inp.prompt,
                env_id=inp.env_id,
                llm_model=inp.llm_model,
            ),
            ElicitResult,
        )
        criteria = elicited.criteria
        self._stage("authoring", model_label=elicited.model_label, criteria=criteria)
        acc.check()

        authors = [
            steps.llm(
                "author_reward",
                AuthorRequest(
                    session_id=session_id,
                    iteration=1,
                    prompt=inp.prompt,
                    env_id=inp.env_id,
                    llm_model=inp.llm_model,
                    criteria=criteria,
                    candidate=k,
                    candidates=inp.candidates,
                ),
                AuthorResult,
            )
            for k in k_all
        ]
        judge_author = (
            []
            if steps.offline
            else [
                steps.llm(
                    "author_judge",
                    JudgeAuthorRequest(
                        session_id=session_id,
                        prompt=inp.prompt,
                        env_id=inp.env_id,
                        llm_model=inp.llm_model,
                        criteria=criteria,
                    ),
                    JudgeCode,
                )
            ]
        )
        visual = (
            [
                steps.llm(
                    "vlm_criteria",
                    VisualCriteriaRequest(
                        session_id=session_id, prompt=inp.prompt, llm_model=inp.llm_model
                    ),
                    VisualCriteria,
                )
            ]
            if not steps.offline and inp.vlm_judge
            else []
        )
        authored = await asyncio.gather(*authors, *judge_author, *visual)
        rewards: list[RewardArtifact] = [a.reward for a in authored[: inp.candidates]]  # type: ignore[union-attr]
        judge: JudgeCode | None = (
            authored[inp.candidates] if judge_author else None  # type: ignore[assignment]
        )
        self._visual_criteria = authored[-1] if visual else None  # type: ignore[assignment]
        acc.check()
        return criteria, rewards, judge

    def _revise_request(
        self,
        inp: SessionInput,
        session_id: str,
        iteration: int,
        criteria: list[Criterion],
        timesteps: int,
        candidate: int,
        feedback: list[str],
        records: list[IterationRecord],
    ) -> ReviseRequest:
        last = self._evidence[iteration - 1]
        top = max(records, key=lambda r: r.score)
        best = self._evidence.get(top.iteration)
        return ReviseRequest(
            session_id=session_id,
            iteration=iteration,
            prompt=inp.prompt,
            env_id=inp.env_id,
            llm_model=inp.llm_model,
            reward=last.reward,
            criteria=criteria,
            judgment=last.judgment,
            train=last.train,
            timesteps=timesteps,
            timesteps_cap=inp.timesteps_cap,
            candidate=candidate,
            candidates=inp.candidates,
            feedback=feedback,
            history=list(records),
            best=best if best and best.judgment.score > last.judgment.score else None,
            algo=inp.algo,
        )

    async def _approval_gate(
        self, inp: SessionInput, iteration: int, rewards: list[RewardArtifact]
    ) -> None:
        """Wait for a person to approve this iteration's reward(s) before any training."""
        self._awaiting_approval, self._decision = iteration, None
        self._stage("awaiting_approval", iteration=iteration, pending_rewards=list(rewards))
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None,
                timeout=timedelta(seconds=inp.approval_timeout_s),
            )
        except TimeoutError:
            if inp.approval_timeout_action == "abort":
                self._abort_reason = f"no approval within {inp.approval_timeout_s} s"
            else:
                self._decision = ApprovalDecision(note="approved by timeout")
        finally:
            self._awaiting_approval = None
        if self._decision is not None and not self._decision.approve:
            self._abort_reason = "reward rejected" + (
                f": {self._decision.note}" if self._decision.note else ""
            )
        if self._abort_reason is not None:
            await workflow.wait_condition(lambda: False)  # run() cancels this loop
        self._stage("training", iteration=iteration, pending_rewards=[])

    def _result(
        self,
        session_id: str,
        records: list[IterationRecord],
        note: str | None,
        aborted: bool = False,
    ) -> SessionResult:
        assert self._status is not None and self._accounting is not None
        best = max(records, key=lambda r: (r.passed, r.score)) if records else None
        if aborted:
            status = "aborted"
        elif note is not None:
            status = "budget_exhausted"
        else:
            status = "passed" if best is not None and best.passed else "not_passed"
        self._stage("done", note=note)
        return SessionResult(
            session_id=session_id,
            status=status,
            passed=bool(best and best.passed),
            model_label=self._status.model_label,
            best_iteration=best.iteration if best else None,
            best_score=best.score if best else None,
            best=best,
            iterations=records,
            criteria=self._status.criteria,
            llm_usage=self._accounting.session,
            training_seconds=round(self._accounting.training_seconds, 2),
            note=note,
        )
