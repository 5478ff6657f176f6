"""SessionWorkflow against the real dev server, with activities replaced by same-name stand-ins."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
from temporalio import activity
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from workflows.models import (
    AuthorRequest,
    AuthorResult,
    Criterion,
    EvalRequest,
    EvalResult,
    JudgeRequest,
    Judgment,
    ReviseRequest,
    ReviseResult,
    RewardArtifact,
    SessionResult,
    TrainRequest,
    TrainResult,
    ValidateRequest,
    ValidateResult,
    task_queue,
)
from workflows.session import SessionWorkflow


@dataclass
class Script:
    """What the stand-ins answer, and what they were asked."""

    scores: list[float]
    validate_error: str | None = None
    calls: dict[str, list] = field(default_factory=dict)

    def log(self, name: str, req) -> None:
        self.calls.setdefault(name, []).append(req)

    def activities(self) -> dict[str, list]:
        script = self

        @activity.defn(name="author_reward")
        async def author_reward(req: AuthorRequest) -> AuthorResult:
            script.log("author_reward", req)
            return AuthorResult(
                reward=_reward(req.session_id, req.iteration, ctrl=0.1),
                criteria=[
                    Criterion(
                        name="speed", description="fast", metric="mean_x_velocity", target=2.0
                    )
                ],
                model_label="offline (no LLM)",
            )

        @activity.defn(name="revise_reward")
        async def revise_reward(req: ReviseRequest) -> ReviseResult:
            script.log("revise_reward", req)
            return ReviseResult(
                reward=_reward(req.session_id, req.iteration, ctrl=req.reward.params["ctrl"] / 2),
                timesteps=int(req.timesteps * 1.5),
                changes="halved the control cost weight",
            )

        @activity.defn(name="validate_reward")
        async def validate_reward(req: ValidateRequest) -> ValidateResult:
            script.log("validate_reward", req)
            if script.validate_error:
                return ValidateResult(ok=False, error=script.validate_error)
            return ValidateResult(ok=True, steps=req.steps, term_magnitudes={"forward": 0.1})

        @activity.defn(name="train_policy")
        async def train_policy(req: TrainRequest) -> TrainResult:
            script.log("train_policy", req)
            prefix = f"sessions/{req.session_id}/iter_{req.iteration}/{req.run_name}/"
            return TrainResult(
                run_prefix=prefix,
                model_key=prefix + "model.zip",
                vecnormalize_key=prefix + "vecnormalize.pkl",
                timesteps_done=req.timesteps,
                mean_episode_return=10.0,
                term_means={"forward": 1.0, "ctrl": -0.5},
            )

        @activity.defn(name="evaluate_policy")
        async def evaluate_policy(req: EvalRequest) -> EvalResult:
            script.log("evaluate_policy", req)
            return EvalResult(
                video_key=req.run_prefix + "videos/eval.mp4",
                trajectory_key=req.run_prefix + "trajectories/eval.npz",
                episode_return=1.0,
                env_return=1.0,
                episode_length=1000,
                terminated=False,
            )

        @activity.defn(name="judge_rollout")
        async def judge_rollout(req: JudgeRequest) -> Judgment:
            script.log("judge_rollout", req)
            score = script.scores[min(len(script.calls["judge_rollout"]), len(script.scores)) - 1]
            passed = score >= req.pass_threshold
            return Judgment(
                score=score,
                passed=passed,
                diagnosis=f"scored {score}",
                failure_tags=[] if passed else ["too_slow"],
            )

        return {
            "llm": [author_reward, revise_reward],
            "train": [validate_reward, train_policy, evaluate_policy],
            "judge": [judge_rollout],
        }


def _reward(session_id: str, iteration: int, ctrl: float) -> RewardArtifact:
    return RewardArtifact(
        key=f"sessions/{session_id}/iter_{iteration}/reward_fn.py",
        latex=r"r = v_x - c \|a\|^2",
        terms=["forward", "ctrl"],
        summary="forward velocity minus control cost",
        template="forward",
        params={"ctrl": ctrl},
    )


async def run_session(
    env: WorkflowEnvironment, prefix: str, script: Script, **overrides
) -> SessionResult:
    data = {"prompt": "run forward", "env_id": "HalfCheetah-v5", "total_timesteps": 1000}
    data.update(overrides, queue_prefix=prefix)
    acts = script.activities()
    workers = [
        Worker(
            env.client,
            task_queue=task_queue("llm", prefix),
            workflows=[SessionWorkflow],
            activities=acts["llm"],
        ),
        Worker(env.client, task_queue=task_queue("train", prefix), activities=acts["train"]),
        Worker(env.client, task_queue=task_queue("judge", prefix), activities=acts["judge"]),
    ]
    async with workers[0], workers[1], workers[2]:
        return await env.client.execute_workflow(
            SessionWorkflow.run,
            data,
            id=f"test-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue("llm", prefix),
        )


async def test_failing_iteration_is_revised_then_passes(temporal_env, queue_prefix):
    script = Script(scores=[0.3, 0.9])
    result = await run_session(temporal_env, queue_prefix, script, max_iterations=3)

    assert result.passed and result.status == "passed"
    assert [r.score for r in result.iterations] == [0.3, 0.9]
    assert result.best_iteration == 2
    assert result.best.best_run.video_key.endswith("iter_2/c0_default_seed_0/videos/eval.mp4")
    # The reviser saw iteration 1's judgment and training, and its changes were applied.
    (revise,) = script.calls["revise_reward"]
    assert revise.judgment.score == 0.3 and revise.judgment.failure_tags == ["too_slow"]
    assert revise.train.term_means["ctrl"] == -0.5
    assert [t.timesteps for t in script.calls["train_policy"]] == [1000, 1500]
    assert result.iterations[1].changes == "halved the control cost weight"
    assert result.model_label == "offline (no LLM)"


async def test_budget_raise_is_capped_by_the_session(temporal_env, queue_prefix):
    script = Script(scores=[0.1, 0.1, 0.1])
    result = await run_session(
        temporal_env, queue_prefix, script, max_iterations=3, max_timesteps_per_iteration=1200
    )
    assert not result.passed and result.status == "not_passed"
    assert [t.timesteps for t in script.calls["train_policy"]] == [1000, 1200, 1200]
    assert len(result.iterations) == 3


async def test_seeds_train_in_parallel_and_best_run_is_kept(temporal_env, queue_prefix):
    script = Script(scores=[0.5, 0.7, 0.6])
    result = await run_session(temporal_env, queue_prefix, script, max_iterations=1, seeds=3)
    assert sorted(t.seed for t in script.calls["train_policy"]) == [0, 1, 2]
    assert result.best_score == 0.7
    assert result.iterations[0].runs == 3


async def test_reward_that_does_not_run_fails_the_session_with_its_error(
    temporal_env, queue_prefix
):
    script = Script(
        scores=[1.0], validate_error="reward_fn.py line 4: NameError: name 'vx' is not defined"
    )
    with pytest.raises(WorkflowFailureError) as info:
        await run_session(temporal_env, queue_prefix, script)
    cause = info.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "RewardInvalid"
    assert "NameError: name 'vx' is not defined" in cause.message
    assert "train_policy" not in script.calls


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"env_id": "Cheetah-v9"}, "env_id"),
        ({"prompt": "  "}, "prompt"),
        ({"total_timesteps": 0}, "total_timesteps"),
        ({"max_iterations": -1}, "max_iterations"),
        ({"total_timesteps": "many"}, "total_timesteps"),
        ({"stepz": 5}, "stepz"),
    ],
)
async def test_bad_input_is_a_non_retryable_error_naming_the_field(
    temporal_env, queue_prefix, override, field
):
    with pytest.raises(WorkflowFailureError) as info:
        await run_session(temporal_env, queue_prefix, Script(scores=[1.0]), **override)
    cause = info.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "InvalidInput" and cause.non_retryable
    assert cause.message.startswith(f"{field}:")
    assert "\n" not in cause.message


async def test_history_holds_keys_and_short_text_only(temporal_env, queue_prefix):
    script = Script(scores=[0.2, 0.95])
    result = await run_session(temporal_env, queue_prefix, script, max_iterations=2)
    handle = temporal_env.client.get_workflow_handle(result.session_id)
    history = await handle.fetch_history()
    sizes = []
    for event in history.events:
        for attr in (
            "activity_task_scheduled_event_attributes",
            "activity_task_completed_event_attributes",
        ):
            if event.HasField(attr):
                payloads = getattr(event, attr)
                payloads = payloads.input if hasattr(payloads, "input") else payloads.result
                sizes.extend(len(p.data) for p in payloads.payloads)
    assert sizes and max(sizes) < 4096
