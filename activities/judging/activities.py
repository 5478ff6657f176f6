"""Judge-pool activities: score an evaluation rollout's trajectory against the criteria.

Two judges: the built-in code judge (metrics from activities/behaviours/metrics.py, used by the
offline author) runs here; LLM-written judge code runs only in a child process. The judgment
also lands next to the run's artifacts as judgment.json, for people and the UI. Judging
heartbeats from start to end (the workflow schedules it with a heartbeat timeout): a worker that
died while judging is noticed, and the judging retried, within the timeout, not its 5 minutes.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from statistics import fmean
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore
from activities.behaviours.measured import verdict_on
from activities.heartbeats import heartbeating
from activities.judging.code_judge import judge_trajectory
from activities.judging.job import JUDGE
from activities.judging.session_tools import session_tool
from activities.logs import activity_logger
from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child, sandbox_refused
from workflows.contracts.activities import (
    JUDGE_ROLLOUT,
    implements,
)
from workflows.contracts.judging import JudgeRequest, Judgment
from workflows.contracts.keys import JUDGMENT, eval_checkpoints_prefix, run_prefix_of

# The judge child's limit, inside the activity's start-to-close (workflows/contracts/timeouts.py,
# JUDGE.inner: 270 s), which also covers reading the episodes from S3 before it starts.
JUDGE_TIMEOUT_S = 120.0


def judgment_key(trajectory_key: str) -> str | None:
    """<run_prefix>judgment.json for a key like <run_prefix>trajectories/eval.npz."""
    prefix = run_prefix_of(trajectory_key)
    return prefix + JUDGMENT if prefix is not None else None


@implements(JUDGE_ROLLOUT)
async def judge_rollout(req: JudgeRequest) -> Judgment:
    """Judge an evaluation episode (and the run's checkpoint episodes) with the session's judge
    code in a child, or with the built-in metrics; the judgment, also saved as judgment.json."""
    # Heartbeats from start to end, S3 included (a heartbeat timeout is set).
    async with heartbeating():
        return await _judge_rollout(req)


async def _judge_rollout(req: JudgeRequest) -> Judgment:
    log = activity_logger(env_id=req.env_id, trajectory=req.trajectory_key)
    store = ArtifactStore()
    data = await asyncio.to_thread(store.get_bytes, req.trajectory_key)  # S3 errors: retryable
    checkpoints = await asyncio.to_thread(checkpoint_trajectories, store, req.trajectory_key)
    extra = [key for keys in checkpoints.values() for key in keys]
    if req.judge_key:
        judgment, extras = await _judge_with_code(store, req, data, extra)
    else:
        judgment, extras = await asyncio.to_thread(_judge_with_metrics, store, req, data, extra)
    judgment = with_checkpoints(judgment, checkpoints, extras)
    key = judgment_key(req.trajectory_key)
    if key:
        body = judgment.model_dump_json(indent=2).encode()
        await asyncio.to_thread(store.put_bytes, key, body, "application/json")
    log.info(
        "rollout judged",
        judge="code" if req.judge_key else "metrics",
        score=judgment.score,
        passed=judgment.passed,
        failure_tags=judgment.failure_tags,
    )
    return judgment


def checkpoint_trajectories(store: ArtifactStore, trajectory_key: str) -> dict[str, list[str]]:
    """The run's evaluation-checkpoint episodes: {"25": [p10, median, p90 npz keys], ...}."""
    run_prefix = run_prefix_of(trajectory_key)
    if run_prefix is None:
        return {}
    prefix = eval_checkpoints_prefix(run_prefix)
    out: dict[str, list[str]] = {}
    for key in sorted(store.list_keys(prefix)):
        if key.endswith(".npz") and not key.endswith("/vecnormalize.npz"):  # not an episode
            pct = key[len(prefix) :].split("/", 1)[0]
            out.setdefault(pct, []).append(key)
    return dict(sorted(out.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 0))


# An extra episode judged: its score and its measured value per criterion.
Judged = tuple[float, dict[str, float]]


def with_checkpoints(
    judgment: Judgment, checkpoints: dict[str, list[str]], extras: list[Judged]
) -> Judgment:
    """The judgment with the mean score and mean measured values per evaluation checkpoint,
    and a line saying how the behaviour developed over training."""
    if not checkpoints:
        return judgment
    means: dict[str, float] = {}
    measured: dict[str, dict[str, float]] = {}
    it = iter(extras)
    for pct, keys in checkpoints.items():
        judged = [next(it) for _ in keys]
        means[pct] = round(sum(score for score, _ in judged) / len(judged), 4)
        names = sorted({name for _, values in judged for name in values})
        measured[pct] = {
            name: round(fmean(v[name] for _, v in judged if name in v), 6) for name in names
        }
    trend = ", ".join(f"{v:.2f}" for v in means.values())
    line = f" Over training ({'/'.join(means)}% of the steps): scores {trend}."
    return judgment.model_copy(
        update={
            "checkpoints": means,
            "checkpoint_measured": measured,
            "diagnosis": judgment.diagnosis + line,
        }
    )


def _judge_with_metrics(
    store: ArtifactStore, req: JudgeRequest, npz: bytes, extra: list[str]
) -> tuple[Judgment, list[Judged]]:
    """The built-in code judge on the evaluation episode, and the `extra` ones judged."""

    def judged(src: bytes) -> Judgment:
        return judge_trajectory(src, req.env_id, req.criteria, req.pass_threshold)

    try:
        return judged(npz), [_scored(judged(store.get_bytes(key))) for key in extra]
    except ValueError as exc:  # TrajectoryError, or an env the metrics do not know
        raise ApplicationError(
            f"trajectory {req.trajectory_key} cannot be judged: {exc}",
            type="TrajectoryInvalid",
            non_retryable=True,
        ) from None


async def _judge_with_code(
    store: ArtifactStore, req: JudgeRequest, npz: bytes, extra: list[str]
) -> tuple[Judgment, list[Judged]]:
    assert req.judge_key is not None
    source = await asyncio.to_thread(store.get_text, req.judge_key)
    with tempfile.TemporaryDirectory(prefix="pf-judge-", ignore_cleanup_errors=True) as tmp:
        traj = Path(tmp) / "eval.npz"
        traj.write_bytes(npz)
        extra_paths, extra_bytes = [], []
        for i, key in enumerate(extra):
            path = Path(tmp) / f"checkpoint_{i}.npz"
            extra_bytes.append(await asyncio.to_thread(store.get_bytes, key))
            path.write_bytes(extra_bytes[-1])
            extra_paths.append(str(path))
        child = ChildRequest(
            env_id=req.env_id,
            judge_source=source,
            judge_filename=PurePosixPath(req.judge_key).name,
            criteria=[c.name for c in req.criteria],
            trajectory_path=str(traj),
            extra_trajectories=extra_paths,
        )
        try:
            result = await run_child(
                JUDGE,
                child,
                Path(tmp) / "out",
                timeout_s=JUDGE_TIMEOUT_S,
                timeout_is_reward_fault=True,
            )
        except ChildFailed as exc:
            if refused := sandbox_refused(exc):
                raise refused from None
            # The judge code passed validation on a random episode; failing on this one is a
            # fault of the code, which retrying cannot fix.
            raise ApplicationError(
                f"judge code failed on {req.trajectory_key}: {exc.message}",
                type="JudgeCodeFailed",
                non_retryable=exc.reward_fault,
            ) from None

    def verdicts() -> tuple[Judgment, list[Judged]]:
        answers = [result["judgment"], *result.get("extra", [])]
        judged = [
            verdict_on(a, req.criteria, data, req.env_id)
            for a, data in zip(answers, [npz, *extra_bytes], strict=True)
        ]
        return judged[0], [_scored(j) for j in judged[1:]]

    # The library measures every episode again: off the event loop.
    return await asyncio.to_thread(verdicts)


def _scored(j: Judgment) -> Judged:
    return j.score, {c.name: c.value for c in j.criteria if c.measured}


JUDGE_ACTIVITIES: list[Callable[..., Any]] = [judge_rollout, session_tool]
