"""The train pool's evaluation activity (`evaluate_policy`): one deterministic episode of a
trained policy in the child, its trajectory and video uploaded beside the run's outputs
(`upload_evaluation`, which training uses for its final evaluation too)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from activities.artifacts import ArtifactStore
from activities.logs import activity_logger
from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child
from activities.training import job
from activities.training.activity_io import (
    child_failure,
    download,
    heartbeating,
    reward_fields,
)
from workflows.contracts import timeouts
from workflows.contracts.activities import EVALUATE_POLICY, implements
from workflows.contracts.training import EvalRequest, EvalResult

# Inside the activity's start-to-close (workflows/contracts/timeouts.py), so the error that
# names it is what the workflow sees.
EVAL_TIMEOUT_S = timeouts.EVALUATE.inner.total_seconds()  # one episode and its video (540 s)


@implements(EVALUATE_POLICY)
async def evaluate_policy(req: EvalRequest) -> EvalResult:
    """One deterministic episode of a trained policy in the child; its trajectory and video
    uploaded beside the run's outputs."""
    # Heartbeats from start to end, S3 included (a heartbeat timeout is set).
    async with heartbeating():
        log = activity_logger(env_id=req.env_id, run_prefix=req.run_prefix)
        store = ArtifactStore()
        prefix = req.run_prefix if req.run_prefix.endswith("/") else req.run_prefix + "/"
        with tempfile.TemporaryDirectory(prefix="pf-eval-", ignore_cleanup_errors=True) as tmp:
            out = Path(tmp) / "out"
            model = await download(store, req.model_key, Path(tmp) / "in" / "model.zip")
            vecnorm = await download(
                store, req.vecnormalize_key, Path(tmp) / "in" / "vecnormalize.npz"
            )
            child = ChildRequest(
                env_id=req.env_id,
                **await reward_fields(store, req.reward_key),
                seed=req.seed,
                model_path=str(model),
                vecnormalize_path=str(vecnorm),
                max_steps=req.max_steps,
                record_video=req.record_video,
                algo=req.algo,
            )
            try:
                result = await run_child(job.EVALUATE, child, out, timeout_s=EVAL_TIMEOUT_S)
            except ChildFailed as exc:
                log.warning("evaluation failed", error=exc.message, reward_fault=exc.reward_fault)
                raise child_failure(exc) from None
            evaluated = await upload_evaluation(store, out, result, prefix)
        log.info(
            "evaluated", episode_return=result["episode_return"], length=result["episode_length"]
        )
        return evaluated


async def upload_evaluation(
    store: ArtifactStore, out: Path, result: dict[str, Any], prefix: str
) -> EvalResult:
    """An evaluation episode's trajectory and video (paths relative to `out`) uploaded under
    the run's prefix; what the workflow gets of it."""
    traj_key = await asyncio.to_thread(
        store.put_file, prefix + result["trajectory"], out / result["trajectory"]
    )
    video_key = None
    if result.get("video"):
        video_key = await asyncio.to_thread(
            store.put_file, prefix + result["video"], out / result["video"]
        )
    return EvalResult(
        video_key=video_key,
        trajectory_key=traj_key,
        episode_return=float(result["episode_return"]),
        env_return=float(result["env_return"]),
        episode_length=int(result["episode_length"]),
        terminated=bool(result["terminated"]),
    )
