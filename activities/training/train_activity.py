"""The train pool's training activity (`train_policy`): one run trained in the child beside
its evaluator, checkpointing to S3 and resuming from an earlier attempt's last checkpoint;
and the settings and result shape batched training (batch_activity.py) shares with it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore
from activities.logs import activity_logger
from activities.metrics import TrainingMeter
from activities.runner.protocol import (
    BATCH_CHECKPOINT_FILES,
    CHECKPOINT_FILES,
    TRAIN_DEVICE_ENV,
    ChildFailed,
    ChildRequest,
    check_device,
)
from activities.runner.supervisor import run_child
from activities.training import beside, job
from activities.training.activity_io import (
    child_failure,
    download,
    heartbeating,
    reward_fields,
    upload_folder,
)
from activities.training.core_share import sharing_cores
from activities.training.evaluate_activity import upload_evaluation
from activities.training.presets import config_variants
from activities.training.stop_at_pass import Stopper
from workflows.contracts import timeouts
from workflows.contracts.activities import TRAIN_POLICY, implements
from workflows.contracts.keys import MODEL, TRAIN_OUTPUTS, VECNORMALIZE, checkpoint_key, run_prefix
from workflows.contracts.training import TrainProgress, TrainRequest, TrainResult

TRAIN_STALL_S = 300.0  # no progress line for this long: the child hangs (lines come every ~2 s)
# Deterministic episodes at each evaluation checkpoint (25/50/75/100% of training).
EVAL_CHECKPOINT_EPISODES = 5


def train_timeout_s(timesteps: int) -> float:
    """The whole training child's limit: inside the activity's start-to-close, leaving time to
    upload its outputs."""
    return timeouts.train(timesteps).inner.total_seconds()


# A single run's checkpoint: the engine's (a batch of one), or the SB3 trainer's (SAC, TD3, a
# warm start, and runs that began before the engine trained single runs).
RUN_CHECKPOINT_FILES = BATCH_CHECKPOINT_FILES + CHECKPOINT_FILES


async def _keep_trained(
    store: ArtifactStore, out: Path, prefix: str, checkpoint_key: str | None
) -> str:
    """Upload a failed run's trained model when it got to write one, and say where it is
    kept (its last checkpoint's, already in S3, when it did not); "" when there is none."""
    model = out / MODEL
    if model.exists():
        for name in TRAIN_OUTPUTS:
            if (out / name).exists():
                await asyncio.to_thread(store.put_file, prefix + name, out / name)
        return f"the trained model is kept at {prefix}{MODEL}"
    if checkpoint_key:
        return f"its last checkpoint is kept at {checkpoint_key}"
    return ""


def checkpoint_every(timesteps: int) -> int:
    """Timesteps between checkpoints: about ten per run, at least 10k steps apart."""
    raw = os.environ.get("POLICYFORGE_CHECKPOINT_EVERY", "")
    if raw.isdigit():
        return int(raw)
    return max(10_000, timesteps // 10)


def train_device() -> str:
    """Where this worker's training children run the engine's networks and update: its
    POLICYFORGE_TRAIN_DEVICE, "cpu" (the default), "cuda" or "auto" (a GPU where the child's
    torch sees one). Another value fails the activity in one line naming the variable; a GPU
    asked for where there is none fails in the child (no silent CPU run)."""
    raw = os.environ.get(TRAIN_DEVICE_ENV, "").strip().lower() or "cpu"
    try:
        return check_device(raw, TRAIN_DEVICE_ENV)
    except ValueError as exc:
        raise ApplicationError(str(exc), type="InvalidWorkerSetting") from None


def _config_overrides(req: TrainRequest) -> dict[str, Any]:
    if req.algo != "ppo":
        return {}
    return config_overrides(req.env_id, req.configs, [req.config])[req.config]


def config_overrides(env_id: str, configs: int, names: list[str]) -> dict[str, dict[str, Any]]:
    """The PPO overrides of each named config among the env's first `configs` variants; a
    non-retryable InvalidInput naming an unknown one."""
    try:
        variants = dict(config_variants(env_id, configs))
    except ValueError as exc:
        raise ApplicationError(str(exc), type="InvalidInput", non_retryable=True) from None
    for name in names:
        if name not in variants:
            raise ApplicationError(
                f"config: unknown config {name!r}; one of {sorted(variants)}",
                type="InvalidInput",
                non_retryable=True,
            )
    return {name: variants[name] for name in names}


def _resume_point() -> TrainProgress | None:
    """The last heartbeat of an earlier attempt of this activity, if it left a checkpoint."""
    details = activity.info().heartbeat_details
    if not details:
        return None
    try:
        raw = details[0]
        progress = raw if isinstance(raw, TrainProgress) else TrainProgress.model_validate(raw)
    except Exception:  # noqa: BLE001 - an unreadable heartbeat means starting over
        return None
    return progress if progress.checkpoint_key else None


@implements(TRAIN_POLICY)
async def train_policy(req: TrainRequest) -> TrainResult:
    """Train a policy in the child, checkpointing to S3 and resuming from an earlier attempt's
    last checkpoint; its outputs uploaded under the run's prefix."""
    log = activity_logger(req.iteration, env_id=req.env_id, run=req.run_name)
    store = ArtifactStore()
    prefix = run_prefix(req.session_id, req.iteration, req.run_name)
    child = ChildRequest(
        env_id=req.env_id,
        **await reward_fields(store, req.reward_key),
        timesteps=req.timesteps,
        seed=req.seed,
        checkpoint_every=checkpoint_every(req.timesteps),
        ppo=_config_overrides(req),
        eval_checkpoint_episodes=EVAL_CHECKPOINT_EPISODES,
        early_eval_steps=req.stop_at_pass.min_steps if req.stop_at_pass else 0,
        max_steps=req.eval_max_steps,
        algo=req.algo,
        max_seconds=req.max_seconds or 0.0,
        device=train_device(),
    )
    resume_from = _resume_point()
    # What every heartbeat carries: an earlier attempt's checkpoint until this one makes its own.
    progress = resume_from or TrainProgress(timesteps=0)
    meter = TrainingMeter(
        activity.metric_meter(),
        req.env_id,
        req.algo,
        (resume_from.checkpoint_timesteps or 0) if resume_from else 0,
        session_id=req.session_id,
        run=req.run_name,
    )
    # Heartbeats from start to end, downloads and uploads included (a heartbeat timeout is set).
    # The run's speed series goes once it ends, however it ends.
    async with heartbeating(lambda: progress), _finishing(meter):
        with (
            sharing_cores() as share,
            tempfile.TemporaryDirectory(prefix="pf-train-", ignore_cleanup_errors=True) as tmp,
        ):
            child = child.model_copy(update={"threads": share.threads})
            out = Path(tmp) / "out"
            share.follow(out)  # the engine takes a new share between updates
            if resume_from is not None:
                assert resume_from.checkpoint_key is not None
                local = Path(tmp) / "resume"
                # The engine's checkpoint, or the SB3 trainer's from before an upgrade.
                for name in RUN_CHECKPOINT_FILES:
                    key = resume_from.checkpoint_key + name
                    if await asyncio.to_thread(store.exists, key):
                        await download(store, key, local / name)
                child = child.model_copy(update={"resume_dir": str(local)})
                log.info("resuming", timesteps=resume_from.checkpoint_timesteps)
            elif req.init_model_key and req.init_vecnormalize_key:
                init = Path(tmp) / "init"
                await download(store, req.init_model_key, init / "model.zip")
                await download(store, req.init_vecnormalize_key, init / "vecnormalize.npz")
                child = child.model_copy(update={"init_dir": str(init)})
                log.info("warm start", model=req.init_model_key)

            async def on_event(event: dict[str, Any]) -> None:
                nonlocal progress
                kind = event.get("event")
                if kind == "progress":
                    progress = progress.model_copy(
                        update={
                            "timesteps": int(event["timesteps"]),
                            "mean_return": event.get("mean_return"),
                        }
                    )
                    activity.heartbeat(progress)
                    meter.progress(progress.timesteps)
                elif kind == "threads":
                    log.info("core share", threads=event.get("threads"))
                elif kind == "warm_start":
                    log.info(
                        "warm start",
                        applied=event.get("applied"),
                        reason=event.get("reason"),
                        returns=event.get("returns"),
                    )
                elif kind == "checkpoint":
                    # Upload first, then heartbeat its key: a retry only sees complete checkpoints.
                    folder = out / event["dir"]
                    key = checkpoint_key(prefix, event["timesteps"])
                    for name in RUN_CHECKPOINT_FILES:
                        if (folder / name).exists():
                            await asyncio.to_thread(store.put_file, key + name, folder / name)
                    progress = progress.model_copy(
                        update={"checkpoint_key": key, "checkpoint_timesteps": event["timesteps"]}
                    )
                    activity.heartbeat(progress)
                    await asyncio.to_thread(shutil.rmtree, folder, True)

            uploaded: set[str] = set()
            rule = req.stop_at_pass if req.algo == "ppo" else None
            stopper = Stopper(rule, req.env_id, out, log) if rule is not None else None

            async def upload_checkpoint(event: dict[str, Any]) -> None:
                # Each checkpoint as soon as the evaluator has kept it, then judged when the
                # run may stop at pass.
                if event.get("event") == "eval_checkpoint":
                    name = f"evals/pct_{event['pct']}"
                    uploaded.add(await upload_folder(store, out, name, prefix))
                    if stopper is not None:
                        await stopper.checkpoint_kept(int(event["pct"]), int(event["timesteps"]))

            side = beside.request(child, out, final_eval=req.final_eval)
            log.info("training", timesteps=req.timesteps, final_eval=req.final_eval)
            try:
                run = await beside.train_beside(
                    run_child(
                        job.TRAIN,
                        child.model_copy(update={"eval_handoff": True}),
                        out,
                        on_event,
                        timeout_s=train_timeout_s(req.timesteps),
                        stall_s=TRAIN_STALL_S,
                    ),
                    run_child(
                        job.EVALUATE_BESIDE,
                        side,
                        Path(tmp) / "beside",
                        upload_checkpoint,
                        timeout_s=train_timeout_s(req.timesteps),
                    ),
                )
            except ChildFailed as exc:
                log.warning("training failed", error=exc.message, reward_fault=exc.reward_fault)
                if exc.reward_fault:
                    # The reward failed (in training or in evaluating it): what was trained
                    # stays, for a person or a later run, and the fixer is told where.
                    kept = await _keep_trained(store, out, prefix, progress.checkpoint_key)
                    if kept:
                        exc = ChildFailed(f"{exc.message}; {kept}", reward_fault=True)
                raise child_failure(exc) from None
            summary = run.summary
            for name in TRAIN_OUTPUTS:
                await asyncio.to_thread(store.put_file, prefix + name, out / name)
            # Evaluation checkpoints not uploaded yet and TensorBoard event files, by name.
            for folder in sorted((out / "evals").glob("pct_*")) + [out / "tensorboard"]:
                name = folder.relative_to(out).as_posix()
                if name not in uploaded:
                    await upload_folder(store, out, name, prefix)
            final = None
            if run.evaluation.get("final"):
                final = await upload_evaluation(
                    store, Path(tmp) / "beside", run.evaluation["final"], prefix
                )
    log.info(
        "trained",
        timesteps=summary["timesteps_done"],
        wall_seconds=summary["wall_seconds"],
        mean_return=summary["mean_episode_return"],
        resumed_from=summary.get("resumed_from_timesteps"),
        final_return=final.episode_return if final else None,
        eval_wait_seconds=round(run.waited_s, 2),
        eval_work_seconds=run.evaluation.get("work_seconds"),
        eval_timeline=run.evaluation.get("timeline"),
    )
    return train_result(prefix, summary).model_copy(
        update={
            "eval_wait_seconds": round(run.waited_s, 2),
            "eval_work_seconds": float(run.evaluation.get("work_seconds", 0.0)),
            "final_eval": final,
        }
    )


@contextlib.asynccontextmanager
async def _finishing(meter: TrainingMeter) -> AsyncIterator[None]:
    try:
        yield
    finally:
        meter.finish()


def train_result(prefix: str, summary: dict[str, Any]) -> TrainResult:
    """A run's TrainResult from its summary.json content, its files under `prefix`."""
    return TrainResult(
        run_prefix=prefix,
        model_key=prefix + MODEL,
        vecnormalize_key=prefix + VECNORMALIZE,
        timesteps_done=int(summary["timesteps_done"]),
        mean_episode_return=summary["mean_episode_return"],
        mean_env_return=summary["mean_env_return"],
        term_means=summary["term_means"],
        wall_seconds=float(summary["wall_seconds"]),
        eval_checkpoint_seconds=float(summary.get("eval_checkpoint_seconds", 0.0)),
        steps_per_second=float(summary["steps_per_second"]),
        still_improving=bool(summary["still_improving"]),
        resumed_from_timesteps=summary.get("resumed_from_timesteps"),
        stopped_at_pct=summary.get("stopped_at_pct"),
        timesteps_budget=summary.get("timesteps"),
        fault=summary.get("fault"),
    )
