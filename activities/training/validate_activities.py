"""The train pool's validation activities: reward code (`validate_reward`) and judge code
(`validate_judge`) run in the child on a few episodes; the code's one-line error is a result
(the workflow revises the code), not a failed activity."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore
from activities.logs import activity_logger
from activities.runner.protocol import ChildFailed, ChildJob, ChildRequest
from activities.runner.supervisor import run_child, sandbox_refused
from activities.training import checked_shaping, job
from activities.training.activity_io import get_text, heartbeating, key_filename, reward_fields
from activities.training.judge_validation import judge_problem
from workflows.contracts import timeouts
from workflows.contracts.activities import VALIDATE_JUDGE, VALIDATE_REWARD, implements
from workflows.contracts.training import ValidateJudgeRequest, ValidateRequest, ValidateResult

# Inner limits, each strictly inside its activity's start-to-close timeout (the table in
# workflows/contracts/timeouts.py), so the error that names it is what the workflow sees.
# 64 random steps take a second; longer means the reward code hangs (150 s).
VALIDATE_TIMEOUT_S = timeouts.VALIDATE.inner.total_seconds()


async def _validate(mode: ChildJob, child: ChildRequest) -> dict[str, Any] | str:
    """Run a validation mode in the child: its result, or the code's one-line error (str).

    Errors that are not the generated code's (the machine, the child) stay retryable.
    """
    with tempfile.TemporaryDirectory(prefix="pf-validate-", ignore_cleanup_errors=True) as tmp:
        try:
            return await run_child(
                mode,
                child,
                Path(tmp),
                timeout_s=VALIDATE_TIMEOUT_S,
                timeout_is_reward_fault=True,
            )
        except ChildFailed as exc:
            if refused := sandbox_refused(exc):
                raise refused from None
            if not exc.reward_fault:
                raise ApplicationError(exc.message, type="ValidationFailed") from None
            return exc.message


@implements(VALIDATE_REWARD)
async def validate_reward(req: ValidateRequest) -> ValidateResult:
    """Run reward code on random-action steps in the child: its term magnitudes, or the
    code's one-line error (not a failed activity: the workflow revises the code)."""
    # Heartbeats from start to end, S3 included (a heartbeat timeout is set).
    async with heartbeating():
        log = activity_logger(env_id=req.env_id, reward_key=req.reward_key)
        store = ArtifactStore()
        source = await get_text(store, req.reward_key)
        child = ChildRequest(
            env_id=req.env_id,
            reward_source=source,
            reward_filename=key_filename(req.reward_key),
            steps=req.steps,
            seed=req.seed,
            shaping=req.shaping,
        )
        result = await _validate(job.VALIDATE, child)
        if isinstance(result, str):
            log.info("reward invalid", error=result)
            return ValidateResult(ok=False, error=result)
        log.info("reward valid", term_magnitudes=result["term_magnitudes"])
        await checked_shaping.save(store, req.reward_key, source, result.get("shaping"))
        return ValidateResult(
            ok=True, steps=int(result["steps"]), term_magnitudes=result["term_magnitudes"]
        )


@implements(VALIDATE_JUDGE)
async def validate_judge(req: ValidateJudgeRequest) -> ValidateResult:
    """Run judge code in the child on episodes that must not pass (random actions, zero
    actions, a fall, the opposite direction; with the session's reward terms), and decide
    here whether it measures the behaviour (activities/training/judge_validation.py)."""
    # Heartbeats from start to end, S3 included (a heartbeat timeout is set).
    async with heartbeating():
        log = activity_logger(env_id=req.env_id, judge_key=req.judge_key)
        store = ArtifactStore()
        child = ChildRequest(
            env_id=req.env_id,
            **await reward_fields(store, req.reward_key),
            judge_source=await get_text(store, req.judge_key),
            judge_filename=key_filename(req.judge_key),
            criteria=req.criteria or [c.name for c in req.specs],
            judge_criteria=req.specs,
            steps=req.steps,
            seed=req.seed,
        )
        result = await _validate(job.VALIDATE_JUDGE, child)
        if isinstance(result, str):
            log.info("judge invalid", error=result)
            return ValidateResult(ok=False, error=result)
        episodes: list[dict[str, Any]] = result["episodes"]
        if problem := judge_problem(episodes, req.specs, child.criteria):
            log.info("judge sent back", problem=problem)
            return ValidateResult(ok=False, error=f"judge_fn sent back at validation: {problem}")
        log.info("judge valid", episodes=[e["name"] for e in episodes], steps=result["steps"])
        return ValidateResult(ok=True, steps=int(result["steps"]))
