"""Starting sessions, waiting for them through faults, and checking that nothing was lost."""

from __future__ import annotations

import asyncio
import hashlib
import io
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from activities.artifacts import ArtifactStore
from tests.builders import start_session
from tests.chaos.stack import LLM_MODEL, Stack
from workflows.contracts.session import RunRecord, SessionResult

FINISHED = ("passed", "not_passed")


async def start(stack: Stack, *, llm: bool = False, timesteps: int = 2048, **inputs: Any) -> Any:
    """A one-iteration session on the stack (offline author unless `llm`), without the video
    judge; its handle (tests/builders.py starts it)."""
    assert stack.client is not None
    fields: dict[str, Any] = {
        "prompt": "run forward as fast as possible",
        "env_id": "HalfCheetah-v5",
        "total_timesteps": timesteps,
        "max_iterations": 1,
        "eval_max_steps": 30,
        "vlm_judge": False,
        **({"llm_model": LLM_MODEL} if llm else {}),
        **inputs,
    }
    return await start_session(stack.client, stack.queue_prefix, **fields)


async def wait_result(
    handle: WorkflowHandle[Any, SessionResult], timeout: float
) -> SessionResult | None:
    """The session's result, retrying through a server that is down; None past `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return await asyncio.wait_for(handle.result(), deadline - time.monotonic())
        except (RPCError, RuntimeError, ConnectionError):
            await asyncio.sleep(1)
        except TimeoutError:
            return None
    return None


@dataclass
class Outcome:
    """A session's result (None: it did not finish in time) and what was wrong with it."""

    session: str
    result: SessionResult | None
    problems: list[str]
    wall_s: float = 0.0

    @property
    def finished(self) -> bool:
        """It ended passed or not_passed."""
        return self.result is not None and self.result.status in FINISHED

    @property
    def lost(self) -> bool:
        """It did not finish, or one of its artifacts is missing or damaged."""
        return not self.finished or bool(self.problems)


async def finish(
    store: ArtifactStore, handle: WorkflowHandle[Any, SessionResult], timeout: float
) -> Outcome:
    """Wait for a session and check everything its result names."""
    started = time.monotonic()
    result = await wait_result(handle, timeout)
    wall = time.monotonic() - started
    if result is None:
        return Outcome(handle.id, None, [f"{handle.id} did not finish in {timeout:.0f}s"], wall)
    problems = [] if result.status in FINISHED else [f"{handle.id} ended {result.status}"]
    problems += await asyncio.to_thread(artifact_problems, store, result)
    return Outcome(handle.id, result, problems, wall)


def _runs(result: SessionResult) -> Iterable[RunRecord]:
    for record in result.iterations:
        yield record.best_run
    if result.best is not None:
        yield result.best.best_run


def artifact_problems(store: ArtifactStore, result: SessionResult) -> list[str]:
    """Every artifact key the result names exists and its bytes match the checksum S3 took at
    upload (the ETag of a single-part upload is the MD5 of the bytes received); the model is a
    sound zip. One line per problem."""
    keys: list[str] = [record.reward_key for record in result.iterations]
    for run in _runs(result):
        keys += [run.model_key, run.vecnormalize_key, run.trajectory_key]
        keys += [run.run_prefix + "summary.json", run.run_prefix + "judgment.json"]
        keys += [run.video_key] if run.video_key else []
    problems: list[str] = []
    if not keys:
        problems.append(f"{result.session_id}: the result names no artifacts")
    for key in dict.fromkeys(keys):
        try:
            obj = store.client.get_object(Bucket=store.bucket, Key=key)
        except Exception as exc:  # noqa: BLE001 - any failure to read is a lost artifact
            problems.append(f"{key}: missing ({type(exc).__name__})")
            continue
        data = obj["Body"].read()
        etag = str(obj.get("ETag", "")).strip('"')
        if "-" not in etag and etag and hashlib.md5(data).hexdigest() != etag:  # noqa: S324
            problems.append(f"{key}: bytes do not match the checksum of the upload")
        if key.endswith(".zip"):
            try:
                with zipfile.ZipFile(io.BytesIO(data)) as archive:
                    bad = archive.testzip()
            except zipfile.BadZipFile:
                bad = "not a zip"
            if bad:
                problems.append(f"{key}: damaged model archive ({bad})")
    return problems


async def activity_retries(client: Client, workflow_id: str) -> int:
    """Retries the session's activities took: the sum of (attempt - 1) over started tasks."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    started = EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    return sum(
        max(0, e.activity_task_started_event_attributes.attempt - 1)
        for e in history.events
        if e.event_type == started
    )
