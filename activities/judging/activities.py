"""Judge-pool activities: score an evaluation rollout's trajectory against the criteria.

Sync activity: the judge worker runs it in its thread pool (boto3 and numpy block that thread).
The judgment also lands next to the run's artifacts as judgment.json, for people and the UI.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore
from activities.judging.code_judge import judge_trajectory
from activities.judging.metrics import TrajectoryError
from activities.logs import activity_logger
from workflows.models import JudgeRequest, Judgment

_TRAJECTORY_DIR = "/trajectories/"


def judgment_key(trajectory_key: str) -> str | None:
    """<run_prefix>judgment.json for a key like <run_prefix>trajectories/eval.npz."""
    head, sep, _ = trajectory_key.rpartition(_TRAJECTORY_DIR)
    return f"{head}/judgment.json" if sep else None


@activity.defn(name="judge_rollout")
def judge_rollout(req: JudgeRequest) -> Judgment:
    log = activity_logger(env_id=req.env_id, trajectory=req.trajectory_key)
    store = ArtifactStore()
    data = store.get_bytes(req.trajectory_key)  # S3 errors stay retryable
    try:
        judgment = judge_trajectory(data, req.env_id, req.criteria, req.pass_threshold)
    except (TrajectoryError, ValueError) as exc:
        raise ApplicationError(
            f"trajectory {req.trajectory_key} cannot be judged: {exc}",
            type="TrajectoryInvalid",
            non_retryable=True,
        ) from None
    key = judgment_key(req.trajectory_key)
    if key:
        store.put_bytes(key, judgment.model_dump_json(indent=2).encode(), "application/json")
    log.info(
        "rollout judged",
        score=judgment.score,
        passed=judgment.passed,
        failure_tags=judgment.failure_tags,
    )
    return judgment


JUDGE_ACTIVITIES = [judge_rollout]
