"""Steps on generated code: validating a reward or a judge until it runs (the fixer between
tries), and sending code that fails after validation back to the fixer once for every run
that waits on it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import activities as act
    from workflows.contracts.activities import ActivityRef
    from workflows.contracts.judging import Criterion, JudgeCode
    from workflows.contracts.llm import (
        FixRequest,
        FixResult,
    )
    from workflows.contracts.session import MAX_FIX_ATTEMPTS
    from workflows.contracts.training import (
        RewardArtifact,
        ValidateJudgeRequest,
        ValidateRequest,
        ValidateResult,
    )
    from workflows.step_base import SHORT_RETRY, Req, StepsBase

Kind = Literal["reward", "judge"]
# Generated code that fails after validation (a reward on states only a trained policy reaches,
# a judge on a later episode) goes back to the fixer instead of ending the session. Histories
# recorded before ended at such a failure, and still do.
CODE_FAULT_PATCH = "code-faults-to-fixer"
# The activity errors that blame the code (non-retryable: running it again fails again).
FAULT_TYPES: dict[Kind, tuple[str, ...]] = {
    "reward": ("RewardRuntimeError",),
    "judge": ("JudgeCodeFailed",),
}
# Faults a session sends to the fixer in all (each costs a fix and a retrain or a re-judge).
MAX_CODE_FAULTS = 4


def _still_invalid(
    kind: Kind, iteration: int, attempt: int, error: str, offline: bool
) -> ApplicationError:
    if kind == "judge":
        return ApplicationError(
            f"judge code is not accepted after {attempt} attempts: {error}",
            type="JudgeInvalid",
            non_retryable=True,
        )
    tries = "" if offline else f" after {attempt} attempts"
    return ApplicationError(
        f"reward code for iteration {iteration} does not run{tries}: {error}",
        type="RewardInvalid",
        non_retryable=True,
    )


def _with_fixes(reward: RewardArtifact, fixes: list[FixResult]) -> RewardArtifact:
    """The reward after the fixer's rounds: the last code, each description as last given."""
    for fixed in fixes:
        reward = reward.model_copy(
            update={
                "key": fixed.key,
                "latex": fixed.latex or reward.latex,
                "terms": fixed.terms or reward.terms,
                "summary": fixed.summary or reward.summary,
                "template": None,
                "params": {},
            }
        )
    return reward


class CodeSteps(StepsBase):
    """Validation and fixes of the session's reward and judge code."""

    async def valid_reward(
        self, iteration: int, candidate: int, reward: RewardArtifact, criteria: list[Criterion]
    ) -> RewardArtifact:
        """Validate on real env steps; on error the LLM fixes it, at most MAX_FIX_ATTEMPTS runs."""
        fixes = await self._until_valid(
            "reward", self._validate_reward, reward.key, iteration, candidate, criteria
        )
        return _with_fixes(reward, fixes)

    async def valid_judge(
        self, judge: JudgeCode, reward_key: str, criteria: list[Criterion]
    ) -> JudgeCode:
        """Validate the judge code on episodes that must not pass (random, zero actions, a fall,
        the opposite direction); when it fails one, or its values cannot be trusted, the LLM fixes
        it (bounded)."""
        fixes = await self._until_valid(
            "judge", self._judge_validator(reward_key, criteria), judge.key, 1, 0, criteria
        )
        return JudgeCode(key=fixes[-1].key, summary=judge.summary) if fixes else judge

    def _validate_reward(self, key: str) -> Awaitable[ValidateResult]:
        # A session whose runs cannot apply SHAPING refuses it here, where the fixer sees why.
        shaping = self.inp.runs_on_engine
        req = ValidateRequest(env_id=self.inp.env_id, reward_key=key, shaping=shaping)
        return self._validate(act.VALIDATE_REWARD, req)

    def _judge_validator(
        self, reward_key: str, criteria: list[Criterion]
    ) -> Callable[[str], Awaitable[ValidateResult]]:
        def validate(key: str) -> Awaitable[ValidateResult]:
            return self._validate(
                act.VALIDATE_JUDGE,
                ValidateJudgeRequest(
                    env_id=self.inp.env_id,
                    judge_key=key,
                    reward_key=reward_key,
                    criteria=[c.name for c in criteria],
                    specs=criteria,
                ),
            )

        return validate

    async def _validate(self, ref: ActivityRef[Req, ValidateResult], req: Req) -> ValidateResult:
        return await self.call(ref, req, retry=SHORT_RETRY)

    async def _until_valid(
        self,
        kind: Kind,
        validate: Callable[[str], Awaitable[ValidateResult]],
        key: str,
        iteration: int,
        candidate: int,
        criteria: list[Criterion],
        fault: str | None = None,
        series: int = 0,
    ) -> list[FixResult]:
        """Validate the code at `key`, and after each failure have the LLM fix it, until it runs
        or MAX_FIX_ATTEMPTS validations failed (then a non-retryable error quoting the last).
        With `fault` (the code failed after validation: the session's `series`-th such fault)
        the first round fixes that error."""
        fixes: list[FixResult] = []
        for attempt in range(1, MAX_FIX_ATTEMPTS + 1):
            if fault is not None and attempt == 1:
                error = fault
            else:
                self.state.stage("validating")
                check = await validate(key)
                if check.ok:
                    return fixes
                error = check.error or "unknown error"
            if self.offline or attempt == MAX_FIX_ATTEMPTS:
                raise _still_invalid(kind, iteration, attempt, error, self.offline)
            self.state.stage("fixing")
            request = self._fix_request(kind, iteration, candidate, key, error, attempt, criteria)
            # The first round of a fault: the code had passed validation.
            after = fault is not None and attempt == 1
            fixed = await self.llm(
                act.FIX_CODE,
                request.model_copy(update={"after_validation": after, "series": series}),
            )
            fixes.append(fixed)
            key = fixed.key
        raise AssertionError("unreachable")

    # --- code that fails after validation ------------------------------------------------------

    def code_fault(self, exc: ActivityError, kind: Kind) -> str | None:
        """The code's one-line error when `exc` blames the generated code and the session may
        still send it to the fixer; None when the caller should let `exc` end the session (not
        the code's fault, the offline author, the budget spent, a history from before)."""
        cause = exc.cause
        if not (
            isinstance(cause, ApplicationError)
            and cause.type in FAULT_TYPES[kind]
            and cause.non_retryable
        ):
            return None
        if self.offline or not workflow.patched(CODE_FAULT_PATCH):
            return None
        return cause.message if self._fix_budget_left() else None

    def member_fault(self, iteration: int, error: str) -> str:
        """A batch member's reward error (the batch trained on without it): returned when it
        may go to the fixer, else raised as the error that ends the session."""
        if self.offline or not self._fix_budget_left():
            raise ApplicationError(
                f"reward code for iteration {iteration} failed in training: {error}",
                type="RewardRuntimeError",
                non_retryable=True,
            )
        return error

    def _fix_budget_left(self) -> bool:
        return len(self._refixes) < MAX_CODE_FAULTS

    async def refix_reward(
        self, iteration: int, candidate: int, reward: RewardArtifact, error: str
    ) -> RewardArtifact:
        """A reward that failed in training, fixed and validated again; the runs of one
        candidate that fail on the same code share one fix."""
        fixes = await self._refix(
            reward.key,
            lambda series: self._until_valid(
                "reward",
                self._validate_reward,
                reward.key,
                iteration,
                candidate,
                self.state.criteria,
                fault=error,
                series=series,
            ),
        )
        return _with_fixes(reward, fixes)

    async def refix_judge(self, judge: JudgeCode, reward_key: str, error: str) -> JudgeCode:
        """The session's judge code that failed on an episode, fixed and validated again; it
        judges every later episode."""
        criteria = self.state.criteria
        fixes = await self._refix(
            judge.key,
            lambda series: self._until_valid(
                "judge",
                self._judge_validator(reward_key, criteria),
                judge.key,
                self.state.iteration,
                0,
                criteria,
                fault=error,
                series=series,
            ),
        )
        fixed = JudgeCode(key=fixes[-1].key, summary=judge.summary)
        if self.state.judge is not None and self.state.judge.key == judge.key:
            self.state.judge = fixed
        return fixed

    async def _refix(
        self, key: str, fix: Callable[[int], Awaitable[list[FixResult]]]
    ) -> list[FixResult]:
        """The fix of the code at `key`, started by the first run that needs it (its series
        number names the fixed files apart from earlier fixes)."""
        if key not in self._refixes:
            self._refixes[key] = asyncio.ensure_future(fix(len(self._refixes) + 1))
        return await self._refixes[key]

    def _fix_request(
        self,
        kind: Kind,
        iteration: int,
        candidate: int,
        key: str,
        error: str,
        attempt: int,
        criteria: list[Criterion],
    ) -> FixRequest:
        return FixRequest(
            session_id=self.session_id,
            iteration=iteration,
            candidate=candidate,
            kind=kind,
            prompt=self.inp.prompt,
            env_id=self.inp.env_id,
            llm_model=self.inp.llm_model,
            code_key=key,
            error=error,
            attempt=attempt,
            criteria=criteria,
        )

    # --- agents with tools -------------------------------------------------------------------
