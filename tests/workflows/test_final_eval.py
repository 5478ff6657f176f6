"""A session asks train_policy for the final evaluation episode: when the train result carries
it, no evaluate_policy runs, and the run is judged and recorded from that episode."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import activity

from tests.workflows.test_session import Script, run_session
from workflows.contracts import keys as layout
from workflows.contracts.training import EvalResult, TrainRequest, TrainResult


@dataclass
class TrainerEvaluates(Script):
    """The stand-ins, with a train_policy that plays the final evaluation when asked."""

    def activities(self) -> dict[str, list]:
        acts = super().activities()
        script = self

        @activity.defn(name="train_policy")
        async def train_policy(req: TrainRequest) -> TrainResult:
            script.log("train_policy", req)
            prefix = layout.run_prefix(req.session_id, req.iteration, req.run_name)
            final = EvalResult(
                video_key=prefix + layout.VIDEO,
                trajectory_key=prefix + layout.TRAJECTORY,
                episode_return=2.0,
                env_return=2.0,
                episode_length=1000,
                terminated=False,
            )
            return TrainResult(
                run_prefix=prefix,
                model_key=prefix + layout.MODEL,
                vecnormalize_key=prefix + layout.VECNORMALIZE,
                timesteps_done=req.timesteps,
                mean_episode_return=10.0,
                wall_seconds=60.0,
                final_eval=final if req.final_eval else None,
            )

        acts["train"] = [
            train_policy if getattr(a, "__name__", "") == "train_policy" else a
            for a in acts["train"]
        ]
        return acts


async def test_the_final_evaluation_comes_with_training(temporal_env, queue_prefix):
    script = TrainerEvaluates(scores=[0.9])
    result = await run_session(temporal_env, queue_prefix, script, max_iterations=1, seeds=2)

    assert result.passed
    trains = script.calls["train_policy"]
    assert len(trains) == 2 and all(t.final_eval for t in trains)
    # No second child for the evaluation: the runs were judged from the episodes training
    # played, and their videos are the ones shown.
    assert "evaluate_policy" not in script.calls
    prefixes = {layout.run_prefix(t.session_id, 1, t.run_name) for t in trains}
    judged = {j.trajectory_key for j in script.calls["judge_rollout"]}
    assert judged == {p + layout.TRAJECTORY for p in prefixes}
    run = result.best.best_run
    assert run.video_key == run.run_prefix + layout.VIDEO
    assert run.trajectory_key == run.run_prefix + layout.TRAJECTORY
