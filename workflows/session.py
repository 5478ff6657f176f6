"""SessionWorkflow: one prompt-to-policy session.

Per iteration: author (or revise) reward → validate it on real env steps → train (one run per
seed, in parallel) → deterministic evaluation rollout → judge → pass, or revise and go on.
Activities are called by name so this module imports nothing heavy, and tests can register
stand-ins under the same names.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.models import (
        AuthorRequest,
        AuthorResult,
        Criterion,
        EvalRequest,
        EvalResult,
        IterationRecord,
        JudgeRequest,
        Judgment,
        ReviseRequest,
        ReviseResult,
        RewardArtifact,
        RunRecord,
        SessionInput,
        SessionResult,
        SessionStatus,
        Stage,
        TrainRequest,
        TrainResult,
        ValidateRequest,
        ValidateResult,
        input_errors,
        task_queue,
    )

_LLM_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(seconds=2))
_TRAIN_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=5))
_SHORT_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))


def _train_timeout(timesteps: int) -> timedelta:
    # Generous: a slow laptop does ~300 steps/s on the heaviest envs; heartbeats catch hangs.
    return timedelta(seconds=600 + timesteps / 100)


@workflow.defn
class SessionWorkflow:
    def __init__(self) -> None:
        self._status: SessionStatus | None = None

    @workflow.query
    def status(self) -> SessionStatus | None:
        return self._status

    def _stage(self, stage: Stage, **changes: Any) -> None:
        assert self._status is not None
        self._status = self._status.model_copy(update={"stage": stage, **changes})

    @workflow.run
    async def run(self, raw_input: dict[str, Any]) -> SessionResult:
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
            model_label=inp.llm_model,
            stage="starting",
            iteration=0,
            max_iterations=inp.max_iterations,
            timesteps_done=0,
            timesteps_target=inp.total_timesteps,
            best_score=None,
            best_iteration=None,
        )
        workflow.logger.info("session started", extra={"session_id": session_id})

        records: list[IterationRecord] = []
        timesteps = inp.total_timesteps
        reward: RewardArtifact | None = None
        criteria: list[Criterion] = []
        changes: str | None = None
        last_train: TrainResult | None = None
        last_judgment: Judgment | None = None

        for iteration in range(1, inp.max_iterations + 1):
            self._stage("authoring" if iteration == 1 else "revising", iteration=iteration)
            if reward is None:
                authored = await workflow.execute_activity(
                    "author_reward",
                    AuthorRequest(
                        session_id=session_id,
                        iteration=iteration,
                        prompt=inp.prompt,
                        env_id=inp.env_id,
                        llm_model=inp.llm_model,
                    ),
                    result_type=AuthorResult,
                    task_queue=task_queue("llm", inp.queue_prefix),
                    start_to_close_timeout=timedelta(minutes=5),
                    retry_policy=_LLM_RETRY,
                )
                reward, criteria = authored.reward, authored.criteria
                self._stage("authoring", model_label=authored.model_label)
            else:
                assert last_train is not None and last_judgment is not None
                revised = await workflow.execute_activity(
                    "revise_reward",
                    ReviseRequest(
                        session_id=session_id,
                        iteration=iteration,
                        prompt=inp.prompt,
                        env_id=inp.env_id,
                        llm_model=inp.llm_model,
                        reward=reward,
                        criteria=criteria,
                        judgment=last_judgment,
                        train=last_train,
                        timesteps=timesteps,
                        timesteps_cap=inp.timesteps_cap,
                    ),
                    result_type=ReviseResult,
                    task_queue=task_queue("llm", inp.queue_prefix),
                    start_to_close_timeout=timedelta(minutes=5),
                    retry_policy=_LLM_RETRY,
                )
                reward, changes = revised.reward, revised.changes
                timesteps = min(max(revised.timesteps, 1), inp.timesteps_cap)

            self._stage("validating", timesteps_done=0, timesteps_target=timesteps)
            check = await workflow.execute_activity(
                "validate_reward",
                ValidateRequest(env_id=inp.env_id, reward_key=reward.key),
                result_type=ValidateResult,
                task_queue=task_queue("train", inp.queue_prefix),
                start_to_close_timeout=timedelta(minutes=3),
                retry_policy=_SHORT_RETRY,
            )
            if not check.ok:
                raise ApplicationError(
                    f"reward code for iteration {iteration} does not run: {check.error}",
                    type="RewardInvalid",
                    non_retryable=True,
                )

            record, last_train, last_judgment = await self._train_and_judge(
                inp, session_id, iteration, reward, criteria, timesteps
            )
            record = record.model_copy(update={"changes": changes})
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
                break

        best = max(records, key=lambda r: (r.passed, r.score))
        self._stage("done")
        return SessionResult(
            session_id=session_id,
            status="passed" if best.passed else "not_passed",
            passed=best.passed,
            model_label=self._status.model_label if self._status else inp.llm_model,
            best_iteration=best.iteration,
            best_score=best.score,
            best=best,
            iterations=records,
        )

    async def _train_and_judge(
        self,
        inp: SessionInput,
        session_id: str,
        iteration: int,
        reward: RewardArtifact,
        criteria: list[Criterion],
        timesteps: int,
    ) -> tuple[IterationRecord, TrainResult, Judgment]:
        """Train one run per seed in parallel, evaluate and judge each; keep the best run."""
        self._stage("training")
        runs = await asyncio.gather(
            *(
                self._one_run(inp, session_id, iteration, reward, criteria, timesteps, seed)
                for seed in range(inp.seeds)
            )
        )
        best_run, best_train, best_judgment = max(runs, key=lambda r: r[2].score)
        mean_score = sum(r[2].score for r in runs) / len(runs)
        record = IterationRecord(
            iteration=iteration,
            reward_key=reward.key,
            reward_summary=reward.summary,
            latex=reward.latex,
            timesteps=timesteps,
            score=best_judgment.score,
            passed=best_judgment.passed,
            diagnosis=best_judgment.diagnosis
            + (f" (mean over {len(runs)} seeds: {mean_score:.2f})" if len(runs) > 1 else ""),
            failure_tags=best_judgment.failure_tags,
            best_run=best_run,
            runs=len(runs),
        )
        return record, best_train, best_judgment

    async def _one_run(
        self,
        inp: SessionInput,
        session_id: str,
        iteration: int,
        reward: RewardArtifact,
        criteria: list[Criterion],
        timesteps: int,
        seed: int,
    ) -> tuple[RunRecord, TrainResult, Judgment]:
        run_name = f"c0_default_seed_{seed}"
        trained = await workflow.execute_activity(
            "train_policy",
            TrainRequest(
                session_id=session_id,
                iteration=iteration,
                run_name=run_name,
                env_id=inp.env_id,
                reward_key=reward.key,
                timesteps=timesteps,
                seed=seed,
            ),
            result_type=TrainResult,
            task_queue=task_queue("train", inp.queue_prefix),
            start_to_close_timeout=_train_timeout(timesteps),
            heartbeat_timeout=timedelta(seconds=60),
            retry_policy=_TRAIN_RETRY,
        )
        self._stage("evaluating", timesteps_done=trained.timesteps_done)
        evaluated = await workflow.execute_activity(
            "evaluate_policy",
            EvalRequest(
                env_id=inp.env_id,
                reward_key=reward.key,
                run_prefix=trained.run_prefix,
                model_key=trained.model_key,
                vecnormalize_key=trained.vecnormalize_key,
                seed=seed,
                max_steps=inp.eval_max_steps,
            ),
            result_type=EvalResult,
            task_queue=task_queue("train", inp.queue_prefix),
            start_to_close_timeout=timedelta(minutes=10),
            retry_policy=_TRAIN_RETRY,
        )
        self._stage("judging")
        judgment = await workflow.execute_activity(
            "judge_rollout",
            JudgeRequest(
                env_id=inp.env_id,
                trajectory_key=evaluated.trajectory_key,
                criteria=criteria,
                pass_threshold=inp.pass_threshold,
            ),
            result_type=Judgment,
            task_queue=task_queue("judge", inp.queue_prefix),
            start_to_close_timeout=timedelta(minutes=5),
            retry_policy=_SHORT_RETRY,
        )
        run = RunRecord(
            run_name=run_name,
            seed=seed,
            run_prefix=trained.run_prefix,
            model_key=trained.model_key,
            vecnormalize_key=trained.vecnormalize_key,
            video_key=evaluated.video_key,
            trajectory_key=evaluated.trajectory_key,
            timesteps_done=trained.timesteps_done,
            score=judgment.score,
            passed=judgment.passed,
        )
        return run, trained, judgment
