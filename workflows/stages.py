"""The stages of a session's iterations, for `SessionWorkflow` (`session.py`): authoring the
criteria, the reward candidates and the judge; revising after the first iteration; reviewing,
validating and fixing the candidates; and the approval gate. Each reads and updates the
session's state; the loop that runs them, the result and a person's requests stay in
`session.py`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import activities as act
    from workflows.contracts.judging import JudgeCode, VisualCriteria
    from workflows.contracts.llm import (
        AuthorRequest,
        AuthorResult,
        ElicitRequest,
        JudgeAuthorRequest,
        ReviewRequest,
        ReviseRequest,
        VisualCriteriaRequest,
    )
    from workflows.contracts.session import (
        IterationRecord,
    )
    from workflows.contracts.steering import ApprovalDecision
    from workflows.contracts.training import RewardArtifact
    from workflows.state import SessionState
    from workflows.steering import Steering
    from workflows.step_base import failure_line
    from workflows.steps import Steps
    from workflows.verdict import record_verdict


# Patches (README, "Deploying a new version"): what changed, for the sessions already running.
FAILED_STAGE_PATCH = "failed-stage-and-reason"
# Sessions of 0.2.0 and before ended without recording a lesson.
LESSON_PATCH = "record-lesson"
# The offline author's own judge code, for criteria no built-in metric measures (a pose, a
# phase of a sequence, a counted jump, a flip).
OFFLINE_JUDGE_PATCH = "offline-judge-code"
# A candidate whose author or reviser gives no usable answer is dropped (the others go on); a
# reviewer or visual-criteria author that fails costs its say, not the session; a model that
# fails after iterations were judged stops the session with its best policy kept.
STAGE_FAILURE_PATCH = "llm-stage-failures-kept"

# Who answers in each LLM activity, in the words a failure line uses.
AGENTS = {
    "elicit_criteria": "the elicitor",
    "author_reward": "the reward author",
    "author_judge": "the judge author",
    "review_reward": "the reviewer",
    "fix_code": "the fixer",
    "revise_reward": "the reviser",
    "vlm_criteria": "the video judge's criteria author",
    "vlm_judge": "the video judge",
    "synthesize_judgment": "the synthesizer",
    "ask_video": "the video model",
}


def stage_failure(exc: BaseException, stage: str, offline: bool = False) -> str:
    """One line: which agent failed in which stage, and the innermost error ("refused: ..."
    as the model said it; the offline author's refusals as they are)."""
    line = failure_line(exc)
    if line.startswith("refused: ") or offline:
        return line
    agent = AGENTS.get(exc.activity_type or "") if isinstance(exc, ActivityError) else None
    return f"{stage}: {agent} failed: {line}" if agent else line


def llm_failure(exc: BaseException) -> bool:
    """An LLM activity that failed for good (not cancelled)."""
    return (
        isinstance(exc, ActivityError)
        and (exc.activity_type or "") in AGENTS
        and not is_cancelled_exception(exc)
    )


def _raise_cancelled(outcomes: list[Any]) -> None:
    """A gather with return_exceptions keeps going on cancellation: pass it on."""
    for outcome in outcomes:
        if isinstance(outcome, BaseException) and is_cancelled_exception(outcome):
            raise outcome


@dataclass
class Plan:
    """What one iteration trains, and how it came about (its record keeps these)."""

    rewards: list[RewardArtifact]
    changes: str | None = None
    based_on: int | None = None
    tools_used: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)
    review_notes: str | None = None


class IterationStages:
    """The iteration's stages as methods of the workflow (it derives from this class): they
    read `state`, `_steering` and `_dropped`, which the workflow sets up."""

    _state: SessionState | None
    _steering: Steering
    _dropped: list[str]

    @property
    def state(self) -> SessionState:
        """The session's state, there once `run` has started."""
        assert self._state is not None
        return self._state

    async def _author(self, steps: Steps) -> list[RewardArtifact]:
        """Criteria, K reward candidates, the judge code and the visual criteria."""
        state, inp = self.state, self.state.inp
        state.stage("eliciting", iteration=1)
        elicited = await steps.llm(
            act.ELICIT_CRITERIA,
            ElicitRequest(
                session_id=state.session_id,
                prompt=inp.prompt,
                env_id=inp.env_id,
                llm_model=inp.llm_model,
                timesteps=state.timesteps,
                algo=inp.algo,
                max_iterations=inp.max_iterations,
            ),
        )
        state.criteria = elicited.criteria
        state.stage("authoring", model_label=elicited.model_label, criteria=state.criteria)
        state.accounting.check()

        # One gather, in this order: the candidates, then the judge, then the visual criteria.
        authors = [
            steps.llm(
                act.AUTHOR_REWARD,
                AuthorRequest(
                    session_id=state.session_id,
                    iteration=1,
                    prompt=inp.prompt,
                    env_id=inp.env_id,
                    llm_model=inp.llm_model,
                    criteria=state.criteria,
                    candidate=k,
                    candidates=inp.candidates,
                ),
            )
            for k in range(inp.candidates)
        ]
        pending: list[Awaitable[object]] = [*authors]
        coded = any(c.metric is None for c in state.criteria)
        if not steps.offline or (coded and workflow.patched(OFFLINE_JUDGE_PATCH)):
            judge = steps.llm(
                act.AUTHOR_JUDGE,
                JudgeAuthorRequest(
                    session_id=state.session_id,
                    prompt=inp.prompt,
                    env_id=inp.env_id,
                    llm_model=inp.llm_model,
                    criteria=state.criteria,
                ),
            )
            pending.append(judge)
            if inp.vlm_judge and not steps.offline:
                visual = steps.llm(
                    act.VLM_CRITERIA,
                    VisualCriteriaRequest(
                        session_id=state.session_id,
                        prompt=inp.prompt,
                        llm_model=inp.llm_model,
                        env_id=inp.env_id,
                        measured=state.criteria,
                    ),
                )
                pending.append(visual)
        if workflow.patched(STAGE_FAILURE_PATCH):
            authored = self._survivors(
                await asyncio.gather(*pending, return_exceptions=True), len(authors), "authoring"
            )
        else:
            authored = await asyncio.gather(*pending)
        state.judge = next((a for a in authored if isinstance(a, JudgeCode)), None)
        state.visual_criteria = next((a for a in authored if isinstance(a, VisualCriteria)), None)
        state.accounting.check()
        results = [a for a in authored if isinstance(a, AuthorResult)]
        state.status.unmeasured = results[0].unmeasured if results else []
        learnt = max((a.timesteps or 0 for a in results), default=0)
        if learnt > state.timesteps and workflow.patched(LESSON_PATCH):
            # A lesson's passing session trained longer: start where it passed (within the cap).
            state.timesteps = min(learnt, inp.timesteps_cap)
        return [a.reward for a in results]

    def _survivors(self, outcomes: list[Any], candidates: int, stage: str) -> list[Any]:
        """The answers of one gather whose first `candidates` are reward candidates: a candidate
        without a usable answer is dropped while another is left; the visual criteria (a
        helper) may fail, costing the video judge; any other failure fails the stage."""
        _raise_cancelled(outcomes)
        failed = [o for o in outcomes[:candidates] if isinstance(o, BaseException)]
        if len(failed) == candidates:
            raise failed[0]
        for k, outcome in enumerate(outcomes):
            if not isinstance(outcome, BaseException):
                continue
            if k < candidates:
                self._dropped.append(f"candidate {k + 1} dropped: {stage_failure(outcome, stage)}")
            elif llm_failure(outcome) and getattr(outcome, "activity_type", "") == "vlm_criteria":
                self._dropped.append(f"no video judge: {stage_failure(outcome, stage)}")
            else:
                raise outcome
        if self._dropped:
            workflow.logger.warning("answers dropped", extra={"dropped": self._dropped})
        return [o for o in outcomes if not isinstance(o, BaseException)]

    async def _revise(self, steps: Steps) -> Plan:
        """Revise from the last iteration's winner, one revision per candidate; the reviser
        sees the whole history and may rebase on the best earlier iteration instead."""
        state = self.state
        state.accounting.new_iteration()
        state.stage("revising", iteration=state.iteration)
        feedback = state.steering.take_feedback()
        asked = [
            steps.revise(self._revise_request(k, feedback)) for k in range(state.inp.candidates)
        ]
        if workflow.patched(STAGE_FAILURE_PATCH):
            revised = self._survivors(
                await asyncio.gather(*asked, return_exceptions=True), len(asked), "revising"
            )
        else:
            revised = await asyncio.gather(*asked)
        rewards = [result.reward for result, _ in revised if result.reward is not None]
        if len(rewards) != len(revised):
            raise ApplicationError(
                "the reviser finished without a reward", type="RewardInvalid", non_retryable=True
            )
        first, tools_used = revised[0]
        state.timesteps = min(max(first.timesteps, 1), state.inp.timesteps_cap)
        if first.config is not None and state.inp.algo == "ppo":
            # The reviser's config first, then the session's others.
            configs = [first.config] + [c for c in state.configs if c != first.config]
            state.configs = configs[: state.inp.configs]
        state.accounting.check()
        return Plan(
            rewards,
            changes=first.changes,
            based_on=first.base_iteration,
            tools_used=tools_used,
            feedback=feedback,
        )

    def _revise_request(self, candidate: int, feedback: list[str]) -> ReviseRequest:
        state, inp = self.state, self.state.inp
        last = state.evidence[state.iteration - 1]
        best = state.evidence.get(state.best().iteration)
        return ReviseRequest(
            session_id=state.session_id,
            iteration=state.iteration,
            prompt=inp.prompt,
            env_id=inp.env_id,
            llm_model=inp.llm_model,
            reward=last.reward,
            criteria=state.criteria,
            judgment=last.judgment,
            train=last.train,
            timesteps=state.timesteps,
            timesteps_cap=inp.timesteps_cap,
            candidate=candidate,
            candidates=inp.candidates,
            feedback=feedback,
            history=list(state.records),
            best=best if best and best.judgment.score > last.judgment.score else None,
            algo=inp.algo,
        )

    async def _review(self, steps: Steps, plan: Plan) -> None:
        """An LLM reviews each candidate for reward hacks and errors, correcting it if needed."""
        state, inp = self.state, self.state.inp
        state.stage("reviewing", iteration=state.iteration)
        kept = workflow.patched(STAGE_FAILURE_PATCH)
        reviews = await asyncio.gather(
            *(
                steps.llm(
                    act.REVIEW_REWARD,
                    ReviewRequest(
                        session_id=state.session_id,
                        iteration=state.iteration,
                        candidate=k,
                        prompt=inp.prompt,
                        env_id=inp.env_id,
                        llm_model=inp.llm_model,
                        reward=reward,
                        criteria=state.criteria,
                    ),
                )
                for k, reward in enumerate(plan.rewards)
            ),
            return_exceptions=kept,
        )
        _raise_cancelled(list(reviews))
        notes = []
        for k, review in enumerate(reviews):
            if isinstance(review, BaseException):
                # The reviewer is a helper: without its look the code trains as authored.
                if not llm_failure(review):
                    raise review
                self._dropped.append(
                    f"candidate {k + 1} not reviewed: {stage_failure(review, 'reviewing')}"
                )
            else:
                plan.rewards[k] = review.reward
                if not review.lgtm:
                    notes.append(review.notes)
        plan.review_notes = "; ".join(notes) or None
        state.accounting.check()

    async def _validate(self, steps: Steps, plan: Plan) -> None:
        """Each candidate (and, once, the judge code) runs on real env steps in the sandbox;
        what fails is fixed by the LLM, within bounds."""
        state = self.state
        state.stage(
            "validating",
            iteration=state.iteration,
            timesteps_done=0,
            timesteps_target=state.timesteps,
        )
        plan.rewards = list(
            await asyncio.gather(
                *(
                    steps.valid_reward(state.iteration, k, reward, state.criteria)
                    for k, reward in enumerate(plan.rewards)
                )
            )
        )
        if state.judge is not None and state.iteration == 1:  # later runs carry it validated
            state.judge = await steps.valid_judge(state.judge, plan.rewards[0].key, state.criteria)
        state.accounting.check()

    def _judged(self, record: IterationRecord, plan: Plan) -> bool:
        """Keep the iteration's record; True when it passed."""
        state = self.state
        record = record.model_copy(
            update={
                "changes": plan.changes,
                "based_on": plan.based_on,
                "tools_used": plan.tools_used,
                "feedback": plan.feedback,
                "review_notes": plan.review_notes,
                "dropped": self._dropped,
                "llm_usage": state.accounting.iteration,
                "training_seconds": round(state.accounting.iteration_training_seconds, 2),
            }
        )
        state.records.append(record)
        self._dropped = []
        best = state.best()
        state.stage(
            "judging",
            iterations=list(state.records),
            best_score=best.score,
            best_iteration=best.iteration,
            verdict=record_verdict(best),
        )
        workflow.logger.info(
            "iteration judged",
            extra={
                "session_id": state.session_id,
                "iteration": record.iteration,
                "score": record.score,
            },
        )
        return record.passed

    async def _approval_gate(self, rewards: list[RewardArtifact]) -> None:
        """Wait for a person to approve this iteration's reward(s) before any training."""
        state, steering = self.state, self._steering
        iteration = state.iteration
        steering.awaiting_approval, steering.decision = iteration, None
        state.stage("awaiting_approval", iteration=iteration, pending_rewards=list(rewards))
        try:
            await workflow.wait_condition(
                lambda: steering.decision is not None,
                timeout=timedelta(seconds=state.inp.approval_timeout_s),
            )
        except TimeoutError:
            if state.inp.approval_timeout_action == "abort":
                steering.abort_reason = f"no approval within {state.inp.approval_timeout_s} s"
            else:
                steering.decision = ApprovalDecision(note="approved by timeout")
        finally:
            steering.awaiting_approval = None
        decision = steering.decision
        if decision is not None and not decision.approve:
            steering.abort_reason = "reward rejected" + (
                f": {decision.note}" if decision.note else ""
            )
        if steering.abort_reason is not None:
            await workflow.wait_condition(lambda: False)  # run() cancels this loop
        state.stage("training", iteration=iteration, pending_rewards=[])
