"""Steps that train and judge: a run or a batch of runs on the train pool (its time charged to
the session), its deterministic evaluation, and the judging of its episodes."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import activities as act
    from workflows.contracts import keys, timeouts
    from workflows.contracts.activities import ActivityRef
    from workflows.contracts.judging import Criterion, JudgeCode, JudgeRequest, Judgment
    from workflows.contracts.session import RunRecord
    from workflows.contracts.training import (
        CONFIG_NAMES,
        BatchMemberRef,
        EvalRequest,
        EvalResult,
        RewardArtifact,
        StopAtPass,
        TrainBatchRequest,
        TrainBatchResult,
        TrainRequest,
        TrainResult,
    )
    from workflows.step_base import SHORT_RETRY, Req, Res, StepsBase

TRAIN_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=5))
# train_policy also plays the final evaluation episode beside training (no evaluate_policy
# call): histories recorded before it replay without the marker.
TRAIN_EVAL_PATCH = "final-eval-beside-training"
# A training call that fails or is cancelled (an abort) is charged the workflow time it ran
# (before, nothing: an aborted session reported 0 min of training after minutes of it).
FAILED_TRAINING_PATCH = "failed-training-charged"


class RunSteps(StepsBase):
    """Training, evaluation and judging."""

    async def _charged(
        self,
        ref: ActivityRef[Req, Res],
        arg: Req,
        *,
        retry: RetryPolicy,
        summary: str,
        deadline: timeouts.Deadline,
    ) -> Res:
        """A training call, its time charged to the session: the runs' own wall seconds when
        it returns, the workflow time it ran when it fails or is cancelled. While it runs, the
        status shows when it began (`training_since`)."""
        began = workflow.now()
        self.accounting.training_began(began)
        try:
            result = await self.call(ref, arg, retry=retry, summary=summary, deadline=deadline)
        except (Exception, asyncio.CancelledError):  # not GeneratorExit: a workflow let go
            ran = (workflow.now() - began).total_seconds()
            charged = ran if workflow.patched(FAILED_TRAINING_PATCH) else None
            self.accounting.training_ended(began, charged)
            raise
        self.accounting.training_ended(began, _wall_seconds(result))
        return result

    async def train(
        self,
        iteration: int,
        run_name: str,
        reward: RewardArtifact,
        timesteps: int,
        seed: int,
        config: str,
        init: RunRecord | None,
    ) -> TrainResult:
        # Only the engine plans its steps from time (PPO without a warm start).
        timesteps, seconds, budget = self._timed(iteration, timesteps, self.inp.algo == "ppo")
        trained = await self._charged(
            act.TRAIN_POLICY,
            TrainRequest(
                session_id=self.session_id,
                iteration=iteration,
                run_name=run_name,
                env_id=self.inp.env_id,
                reward_key=reward.key,
                timesteps=timesteps,
                seed=seed,
                config=config,
                # Enough variants that a config the reviser chose is among them.
                configs=max(self.inp.configs, CONFIG_NAMES.index(config) + 1),
                algo=self.inp.algo,
                eval_max_steps=self.inp.eval_max_steps,
                init_model_key=init.model_key if init else None,
                init_vecnormalize_key=init.vecnormalize_key if init else None,
                final_eval=workflow.patched(TRAIN_EVAL_PATCH),
                stop_at_pass=self._stop_at_pass(),
                max_seconds=seconds,
            ),
            summary=f"train {run_name}: {budget} steps of {self.inp.algo.upper()}",
            # A dead worker is noticed within the heartbeat timeout; the retry resumes from
            # the checkpoint in the last heartbeat.
            deadline=timeouts.train(timesteps),
            retry=TRAIN_RETRY,
        )
        return trained

    def _timed(self, iteration: int, timesteps: int, engine: bool) -> tuple[int, float | None, str]:
        """With max_training_minutes, a run on the engine plans its steps from its share of
        the time left, up to the timed cap: (steps at most, seconds or None, how to say it)."""
        seconds = self.accounting.training_seconds_for(iteration) if engine else None
        if seconds is None:
            return timesteps, None, f"{timesteps:,}"
        cap = max(timesteps, self.inp.timed_timesteps_cap)
        return cap, seconds, f"{seconds / 60:.1f} min, at most {cap:,}"

    def _stop_at_pass(self) -> StopAtPass | None:
        """How a run may stop before its budget: its checkpoints judged as the session judges
        (None when the session trains every step)."""
        share = self.inp.min_training_share or 0.0
        if share >= 1.0 or not self.state.criteria:
            return None
        return StopAtPass(
            criteria=self.state.criteria,
            pass_threshold=self.inp.pass_threshold,
            judge_key=self.state.judge.key if self.state.judge else None,
            min_share=share,
            min_steps=self.inp.min_training_steps,
        )

    async def train_batch(
        self, iteration: int, members: list[BatchMemberRef], timesteps: int, seed: int
    ) -> list[TrainResult]:
        """An iteration's runs of one seed trained together (train_batch); their results in
        the members' order."""
        configs = max(self.inp.configs, *(CONFIG_NAMES.index(m.config) + 1 for m in members))
        timesteps, seconds, budget = self._timed(iteration, timesteps, True)
        batch = await self._charged(
            act.TRAIN_BATCH,
            TrainBatchRequest(
                session_id=self.session_id,
                iteration=iteration,
                batch_name=keys.batch_name(seed),
                env_id=self.inp.env_id,
                members=members,
                timesteps=timesteps,
                seed=seed,
                configs=configs,
                eval_max_steps=self.inp.eval_max_steps,
                max_seconds=seconds,
            ),
            summary=f"train {len(members)} runs of seed {seed} together: {budget} steps each",
            # The heartbeat notices a dead worker; the retry resumes every group's checkpoint.
            deadline=timeouts.train(timesteps * len(members)),
            retry=TRAIN_RETRY,
        )
        return batch.results

    async def evaluate(self, reward: RewardArtifact, trained: TrainResult, seed: int) -> EvalResult:
        """The run's deterministic evaluation episode: the one train_policy played beside
        training when it was asked to, else an evaluate_policy call."""
        if trained.final_eval is not None:
            return trained.final_eval
        return await self.call(
            act.EVALUATE_POLICY,
            EvalRequest(
                env_id=self.inp.env_id,
                reward_key=reward.key,
                run_prefix=trained.run_prefix,
                model_key=trained.model_key,
                vecnormalize_key=trained.vecnormalize_key,
                seed=seed,
                max_steps=self.inp.eval_max_steps,
                algo=self.inp.algo,
            ),
            summary=f"deterministic evaluation episode of {trained.run_prefix.split('/')[-2]}",
            retry=TRAIN_RETRY,
        )

    async def judge(
        self, evaluated: EvalResult, criteria: list[Criterion], judge: JudgeCode | None
    ) -> Judgment:
        return await self.call(
            act.JUDGE_ROLLOUT,
            JudgeRequest(
                env_id=self.inp.env_id,
                trajectory_key=evaluated.trajectory_key,
                criteria=criteria,
                pass_threshold=self.inp.pass_threshold,
                judge_key=judge.key if judge else None,
            ),
            summary="judge the rollout with "
            + ("the session's judge code" if judge else "metrics"),
            retry=SHORT_RETRY,
        )


def _wall_seconds(result: Any) -> float:
    """A training call's wall seconds: a run's own, or a batch's mean over its runs (they
    trained together, at once)."""
    if isinstance(result, TrainBatchResult):
        walls = [r.wall_seconds for r in result.results]
        return sum(walls) / len(walls) if walls else 0.0
    return float(result.wall_seconds)
