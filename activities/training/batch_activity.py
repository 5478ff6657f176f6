"""The train pool's batched training: an iteration's runs of one seed trained together.

`train_batch` groups its members (candidates x configs) by batch shape (presets.batch_key),
runs one training child per group at once (`job.TRAIN_BATCH`: one process per group, each
member's reward in its own sandbox), and heartbeats every group's progress. Checkpoints go to
S3 under the batch's prefix, one folder per group; a retried attempt (its worker was killed)
resumes each group from the checkpoint its last heartbeat named. Each member's model,
normalisation, scalars and summary are uploaded under its own run prefix, the files
`train_policy` writes, so evaluation and judging take it from there unchanged. Beside each group
an evaluator child (`side_eval.evaluate_members_beside`) keeps the members' evaluation
checkpoints on the core training leaves idle; each is uploaded as soon as it is kept.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.artifacts import ArtifactStore
from activities.logs import activity_logger
from activities.runner.protocol import (
    BATCH_CHECKPOINT_FILES,
    BatchMember,
    ChildFailed,
    ChildRequest,
)
from activities.runner.supervisor import run_child
from activities.training import beside, checked_shaping, job
from activities.training.activity_io import (
    child_failure,
    download,
    get_text,
    heartbeating,
    key_filename,
    upload_folder,
)
from activities.training.core_share import Share, sharing_cores
from activities.training.eval_checkpoints import HANDOFF, write_marker
from activities.training.presets import batch_key, preset_for
from activities.training.train_activity import (
    EVAL_CHECKPOINT_EPISODES,
    TRAIN_STALL_S,
    checkpoint_every,
    config_overrides,
    train_device,
    train_result,
    train_timeout_s,
)
from workflows.contracts.activities import TRAIN_BATCH, implements
from workflows.contracts.keys import (
    MODEL,
    TRAIN_OUTPUTS,
    VECNORMALIZE,
    checkpoint_key,
    eval_checkpoints_prefix,
    run_prefix,
)
from workflows.contracts.training import (
    BatchMemberRef,
    BatchProgress,
    TrainBatchRequest,
    TrainBatchResult,
    TrainProgress,
    TrainResult,
)

# Beside a handed-over policy in S3: its marker, until the evaluator has kept the checkpoint.
HANDED_OVER = "handed_over.json"


def _overrides(req: TrainBatchRequest) -> dict[str, dict[str, Any]]:
    return config_overrides(req.env_id, req.configs, [m.config for m in req.members])


def groups_of(req: TrainBatchRequest) -> list[list[BatchMemberRef]]:
    """The members split by batch shape, in first-seen order."""
    variants = _overrides(req)
    groups: dict[tuple[Any, ...], list[BatchMemberRef]] = {}
    for m in req.members:
        groups.setdefault(batch_key(preset_for(req.env_id, variants[m.config])), []).append(m)
    return list(groups.values())


def _resume_points() -> dict[str, TrainProgress]:
    """Each group's checkpoint from an earlier attempt's last heartbeat (none: start over)."""
    details = activity.info().heartbeat_details
    if not details:
        return {}
    try:
        raw = details[0]
        progress = raw if isinstance(raw, BatchProgress) else BatchProgress.model_validate(raw)
    except Exception:  # noqa: BLE001 - an unreadable heartbeat means starting over
        return {}
    return {name: p for name, p in progress.groups.items() if p.checkpoint_key}


async def _hand_back(store: ArtifactStore, prefix: str, member_out: Path) -> None:
    """Hand the evaluator again what an earlier attempt handed over but saw no checkpoint kept
    of (its worker was killed first): those policies and markers, from S3, into member_out."""
    base = eval_checkpoints_prefix(prefix)
    files: dict[str, set[str]] = {}
    for key in await asyncio.to_thread(store.list_keys, base):
        pct, _, name = key[len(base) :].partition("/")
        files.setdefault(pct, set()).add(name)
    for pct, names in sorted(files.items()):
        if HANDED_OVER not in names or "returns.json" in names:
            continue
        folder = member_out / "evals" / f"pct_{pct}"
        for name in (MODEL, VECNORMALIZE):
            await download(store, f"{base}{pct}/{name}", folder / name)
        marker = json.loads(await get_text(store, f"{base}{pct}/{HANDED_OVER}"))
        write_marker(member_out / HANDOFF / f"pct_{pct}.json", marker)


@implements(TRAIN_BATCH)
async def train_batch(req: TrainBatchRequest) -> TrainBatchResult:
    """Train the members together (see the module docstring); each member's TrainResult."""
    log = activity_logger(req.iteration, env_id=req.env_id, run=req.batch_name)
    store = ArtifactStore()
    variants = _overrides(req)
    device = train_device()  # a bad worker setting fails before anything is fetched
    groups = groups_of(req)
    batch_prefix = run_prefix(req.session_id, req.iteration, req.batch_name)
    resume = _resume_points()
    progress = BatchProgress(
        groups={
            f"g{i}": resume.get(f"g{i}") or TrainProgress(timesteps=0) for i in range(len(groups))
        }
    )
    sources = {m.reward_key: await get_text(store, m.reward_key) for m in req.members}
    shapings = {k: await checked_shaping.load(store, k, source) for k, source in sources.items()}
    results: dict[str, TrainResult] = {}

    def _prefix(run_name: str) -> str:
        return run_prefix(req.session_id, req.iteration, run_name)

    t0 = time.monotonic()

    async def one(i: int, members: list[BatchMemberRef], tmp: Path, share: Share) -> None:
        name = f"g{i}"
        out = tmp / name / "out"
        share.follow(out)  # the engine takes a new share between updates
        child = ChildRequest(
            env_id=req.env_id,
            threads=share.threads,
            timesteps=req.timesteps,
            seed=req.seed,
            checkpoint_every=checkpoint_every(req.timesteps),
            max_steps=req.eval_max_steps,
            eval_checkpoint_episodes=EVAL_CHECKPOINT_EPISODES,
            eval_handoff=True,
            max_seconds=req.max_seconds or 0.0,
            device=device,
            members=[
                BatchMember(
                    name=m.run_name,
                    reward_source=sources[m.reward_key],
                    reward_filename=key_filename(m.reward_key),
                    reward_shaping=shapings[m.reward_key],
                    ppo=variants[m.config],
                )
                for m in members
            ],
        )
        prefix = f"{batch_prefix}{name}/"
        point = resume.get(name)
        if point is not None and point.checkpoint_key:
            local = tmp / name / "resume"
            for file in BATCH_CHECKPOINT_FILES:
                await download(store, point.checkpoint_key + file, local / file)
            child = child.model_copy(update={"resume_dir": str(local)})
            log.info("resuming", group=name, timesteps=point.checkpoint_timesteps)
            for m in members:
                await _hand_back(store, _prefix(m.run_name), out / m.run_name)

        async def on_event(event: dict[str, Any]) -> None:
            kind = event.get("event")
            current = progress.groups[name]
            if kind == "progress":
                progress.groups[name] = current.model_copy(
                    update={
                        "timesteps": int(event["timesteps"]),
                        "mean_return": event.get("mean_return"),
                    }
                )
                activity.heartbeat(progress)
            elif kind == "checkpoint":
                # Upload first, then heartbeat its key: a retry only sees complete checkpoints.
                folder = out / event["dir"]
                key = checkpoint_key(prefix, event["timesteps"])
                for file in BATCH_CHECKPOINT_FILES:
                    await asyncio.to_thread(store.put_file, key + file, folder / file)
                progress.groups[name] = current.model_copy(
                    update={"checkpoint_key": key, "checkpoint_timesteps": event["timesteps"]}
                )
                activity.heartbeat(progress)
            elif kind == "eval_handoff":
                # The policy handed to the evaluator, and its marker: a retry that resumes past
                # this point hands it over again if the evaluator had not kept it (_hand_back).
                member, pct = event["member"], event["pct"]
                folder = f"evals/pct_{pct}"
                await upload_folder(store, out / member, folder, _prefix(member))
                marker = out / member / HANDOFF / f"pct_{pct}.json"
                key = _prefix(member) + f"{folder}/{HANDED_OVER}"
                await asyncio.to_thread(store.put_file, key, marker)

        async def on_evaluated(event: dict[str, Any]) -> None:
            # Each member's evaluation checkpoint under its run as soon as it is kept (its
            # policy went up when it was handed over).
            if event.get("event") == "eval_checkpoint":
                member = event["member"]
                folder = f"evals/pct_{event['pct']}"
                policy = frozenset((MODEL, VECNORMALIZE))
                await upload_folder(store, out / member, folder, _prefix(member), policy)

        timeout_s = train_timeout_s(req.timesteps * len(members))
        try:
            run = await beside.train_beside(
                run_child(
                    job.TRAIN_BATCH,
                    child,
                    out,
                    on_event,
                    timeout_s=timeout_s,
                    stall_s=TRAIN_STALL_S,
                ),
                run_child(
                    job.EVALUATE_MEMBERS_BESIDE,
                    beside.request(child, out, final_eval=False),
                    tmp / name / "beside",
                    on_evaluated,
                    timeout_s=timeout_s,
                ),
            )
        except ChildFailed as exc:
            log.warning("batch training failed", error=exc.message, reward_fault=exc.reward_fault)
            raise child_failure(exc) from None
        summary = run.summary
        for m in members:
            for file in TRAIN_OUTPUTS:
                await asyncio.to_thread(
                    store.put_file, _prefix(m.run_name) + file, out / m.run_name / file
                )
            results[m.run_name] = train_result(
                _prefix(m.run_name), summary["members"][m.run_name]
            ).model_copy(
                update={
                    # The group's evaluator: what the batch waited for after training ended
                    # (the last checkpoints) and what it did while training went on.
                    "eval_wait_seconds": round(run.waited_s, 2),
                    "eval_work_seconds": float(run.evaluation.get("work_seconds", 0.0)),
                }
            )

    log.info("training batch", members=len(req.members), groups=len(groups))
    async with heartbeating(lambda: progress):
        with (
            sharing_cores(len(groups)) as share,
            tempfile.TemporaryDirectory(prefix="pf-batch-", ignore_cleanup_errors=True) as tmp,
        ):
            await asyncio.gather(*(one(i, g, Path(tmp), share) for i, g in enumerate(groups)))
    wall = time.monotonic() - t0
    ordered = [results[m.run_name] for m in req.members]
    steps = sum(r.timesteps_done - (r.resumed_from_timesteps or 0) for r in ordered)
    log.info("trained batch", wall_seconds=round(wall, 1), groups=len(groups))
    return TrainBatchResult(
        results=ordered, groups=len(groups), steps_per_second=round(steps / max(wall, 1e-9), 1)
    )
