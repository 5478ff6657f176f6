"""What the train pool's activities share: reading their inputs from S3 (a missing one a
non-retryable ArtifactMissing), uploading a folder of outputs under a run's prefix,
heartbeating while a child runs, and the activity error a failed child becomes."""

from __future__ import annotations

import asyncio
from pathlib import Path, PurePosixPath
from typing import Any

from botocore.exceptions import ClientError
from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore
from activities.heartbeats import heartbeating as heartbeating
from activities.runner.protocol import ChildFailed
from activities.runner.supervisor import sandbox_refused


def key_filename(key: str) -> str:
    """The file name an S3 key ends in (the child names the code by it)."""
    return PurePosixPath(key).name or "reward_fn.py"


async def get_text(store: ArtifactStore, key: str) -> str:
    """An artifact's text; a missing one is a non-retryable ArtifactMissing."""
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


async def download(store: ArtifactStore, key: str, path: Path) -> Path:
    """An artifact downloaded to `path`; a failed download is an ArtifactMissing."""
    try:
        return await asyncio.to_thread(store.download, key, path)
    except ClientError as exc:
        raise ApplicationError(
            f"cannot download s3://{store.bucket}/{key}: {exc}",
            type="ArtifactMissing",
            non_retryable=exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"),
        ) from None


def child_failure(exc: ChildFailed) -> ApplicationError:
    """The activity error a failed child becomes."""
    if refused := sandbox_refused(exc):
        return refused
    # Reward code at fault: retrying runs the same code again, so the workflow must revise it.
    return ApplicationError(
        exc.message,
        type="RewardRuntimeError" if exc.reward_fault else "TrainingFailed",
        non_retryable=exc.reward_fault,
    )


async def upload_folder(
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


async def reward_fields(store: ArtifactStore, key: str) -> dict[str, Any]:
    """A ChildRequest's reward fields for the code at `key`: its source, its file name and the
    SHAPING its validation checked (activities/training/checked_shaping.py)."""
    from activities.training import checked_shaping

    source = await get_text(store, key)
    return {
        "reward_source": source,
        "reward_filename": key_filename(key),
        "reward_shaping": await checked_shaping.load(store, key, source),
    }
