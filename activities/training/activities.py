"""Temporal activities of the train pool: validate reward code, train PPO, evaluate a policy.

Thin wrappers: fetch inputs from S3, run the stage's child (`job.py`, which starts the sandbox
where the reward code runs) under `supervisor.run_child`, heartbeat its progress, upload its
outputs. Each works in its own
temporary folder, removed at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path, PurePosixPath
from typing import Any

from botocore.exceptions import ClientError
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
    ChildJob,
    ChildRequest,
    check_device,
)
from activities.runner.supervisor import run_child, sandbox_refused
from activities.training import beside, checked_shaping, job
from activities.training.core_share import sharing_cores
from activities.training.judge_validation import judge_problem
from activities.training.presets import config_variants
from activities.training.stop_at_pass import Stopper
from workflows.contracts import timeouts
from workflows.contracts.activities import (
    EVALUATE_POLICY,
    TRAIN_POLICY,
    VALIDATE_JUDGE,
    VALIDATE_REWARD,
    implements,
)
from workflows.contracts.keys import MODEL, TRAIN_OUTPUTS, VECNORMALIZE, checkpoint_key, run_prefix
from workflows.contracts.training import (
    EvalRequest,
    EvalResult,
    TrainProgress,
    TrainRequest,
    TrainResult,
    ValidateJudgeRequest,
    ValidateRequest,
    ValidateResult,
)

# Inner limits, each strictly inside its activity's start-to-close timeout (the table in
# workflows/contracts/timeouts.py), so the error that names it is what the workflow sees.
# 64 random steps take a second; longer means the reward code hangs (150 s).
VALIDATE_TIMEOUT_S = timeouts.VALIDATE.inner.total_seconds()
EVAL_TIMEOUT_S = timeouts.EVALUATE.inner.total_seconds()  # one episode and its video (540 s)
TRAIN_STALL_S = 300.0  # no progress line for this long: the child hangs (lines come every ~2 s)
# Deterministic episodes at each evaluation checkpoint (25/50/75/100% of training).
EVAL_CHECKPOINT_EPISODES = 5
HEARTBEAT_EVERY_S = timeouts.HEARTBEAT_EVERY.total_seconds()


def train_timeout_s(timesteps: int) -> float:
    """The whole training child's limit: inside the activity's start-to-close, leaving time to
    upload its outputs."""
    return timeouts.train(timesteps).inner.total_seconds()


def _filename(key: str) -> str:
    return PurePosixPath(key).name or "reward_fn.py"


async def _get_text(store: ArtifactStore, key: str) -> str:
    try:
        return await asyncio.to_thread(store.get_text, key)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("NoSuchKey", "404", "NotFound"):
            raise ApplicationError(
                f"artifact s3://{store.bucket}/{key} does not exist",
                type="ArtifactMissing",
                non_retryable=True,
            ) from None
        raise


async def _download(store: ArtifactStore, key: str, path: Path) -> Path:
    try:
        return await asyncio.to_thread(store.download, key, path)
    except ClientError as exc:
        raise ApplicationError(
            f"cannot download s3://{store.bucket}/{key}: {exc}",
            type="ArtifactMissing",
            non_retryable=exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"),
        ) from None


@contextlib.asynccontextmanager
async def _heartbeating(details: Callable[[], Any] | None = None) -> AsyncIterator[None]:
    """Heartbeat every few seconds while the child runs: it keeps cancellation deliverable."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_EVERY_S)
            if details is None:
                activity.heartbeat()
            else:
                activity.heartbeat(details())

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _failure(exc: ChildFailed) -> ApplicationError:
    if refused := sandbox_refused(exc):
        return refused
    # Reward code at fault: retrying runs the same code again, so the workflow must revise it.
    return ApplicationError(
        exc.message,
        type="RewardRuntimeError" if exc.reward_fault else "TrainingFailed",
        non_retryable=exc.reward_fault,
    )


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
    async with _heartbeating():
        log = activity_logger(env_id=req.env_id, reward_key=req.reward_key)
        store = ArtifactStore()
        source = await _get_text(store, req.reward_key)
        child = ChildRequest(
            env_id=req.env_id,
            reward_source=source,
            reward_filename=_filename(req.reward_key),
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
    async with _heartbeating():
        log = activity_logger(env_id=req.env_id, judge_key=req.judge_key)
        store = ArtifactStore()
        source = await _get_text(store, req.reward_key)
        child = ChildRequest(
            env_id=req.env_id,
            reward_source=source,
            reward_filename=_filename(req.reward_key),
            reward_shaping=await checked_shaping.load(store, req.reward_key, source),
            judge_source=await _get_text(store, req.judge_key),
            judge_filename=_filename(req.judge_key),
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
    source = await _get_text(store, req.reward_key)
    prefix = run_prefix(req.session_id, req.iteration, req.run_name)
    child = ChildRequest(
        env_id=req.env_id,
        reward_source=source,
        reward_filename=_filename(req.reward_key),
        reward_shaping=await checked_shaping.load(store, req.reward_key, source),
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
    async with _heartbeating(lambda: progress), _finishing(meter):
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
                        await _download(store, key, local / name)
                child = child.model_copy(update={"resume_dir": str(local)})
                log.info("resuming", timesteps=resume_from.checkpoint_timesteps)
            elif req.init_model_key and req.init_vecnormalize_key:
                init = Path(tmp) / "init"
                await _download(store, req.init_model_key, init / "model.zip")
                await _download(store, req.init_vecnormalize_key, init / "vecnormalize.npz")
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
                    uploaded.add(await _upload_folder(store, out, name, prefix))
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
                raise _failure(exc) from None
            summary = run.summary
            for name in TRAIN_OUTPUTS:
                await asyncio.to_thread(store.put_file, prefix + name, out / name)
            # Evaluation checkpoints not uploaded yet and TensorBoard event files, by name.
            for folder in sorted((out / "evals").glob("pct_*")) + [out / "tensorboard"]:
                name = folder.relative_to(out).as_posix()
                if name not in uploaded:
                    await _upload_folder(store, out, name, prefix)
            final = None
            if run.evaluation.get("final"):
                final = await _upload_evaluation(
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


@implements(EVALUATE_POLICY)
async def evaluate_policy(req: EvalRequest) -> EvalResult:
    """One deterministic episode of a trained policy in the child; its trajectory and video
    uploaded beside the run's outputs."""
    # Heartbeats from start to end, S3 included (a heartbeat timeout is set).
    async with _heartbeating():
        log = activity_logger(env_id=req.env_id, run_prefix=req.run_prefix)
        store = ArtifactStore()
        source = await _get_text(store, req.reward_key)
        prefix = req.run_prefix if req.run_prefix.endswith("/") else req.run_prefix + "/"
        with tempfile.TemporaryDirectory(prefix="pf-eval-", ignore_cleanup_errors=True) as tmp:
            out = Path(tmp) / "out"
            model = await _download(store, req.model_key, Path(tmp) / "in" / "model.zip")
            vecnorm = await _download(
                store, req.vecnormalize_key, Path(tmp) / "in" / "vecnormalize.npz"
            )
            child = ChildRequest(
                env_id=req.env_id,
                reward_source=source,
                reward_filename=_filename(req.reward_key),
                reward_shaping=await checked_shaping.load(store, req.reward_key, source),
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
                raise _failure(exc) from None
            evaluated = await _upload_evaluation(store, out, result, prefix)
        log.info(
            "evaluated", episode_return=result["episode_return"], length=result["episode_length"]
        )
        return evaluated


async def _upload_evaluation(
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


async def _upload_folder(
    store: ArtifactStore, out: Path, name: str, prefix: str, skip: frozenset[str] = frozenset()
) -> str:
    """Every file under out/name (but those named in `skip`), under the same names below the
    run's prefix; the name."""
    folder = out / name
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if path.is_file() and path.name not in skip:
            key = prefix + path.relative_to(out).as_posix()
            await asyncio.to_thread(store.put_file, key, path)
    return name


TRAIN_ACTIVITIES: list[Callable[..., Any]] = [
    validate_reward,
    validate_judge,
    train_policy,
    evaluate_policy,
]
