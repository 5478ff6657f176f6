"""Objects planted under a session's folder larger than the dashboard reads (anyone who can
write the bucket can plant a 2 GB summary.json) are named as unreadable, never read whole: the
page still answers at once, and the dashboard's memory does not grow by the object's size
(real SeaweedFS and Temporal)."""

from __future__ import annotations

import asyncio
import io
import json
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.artifacts import ArtifactStore, ObjectTooLarge
from tests.workers.dashboard.client import Http
from tests.workers.dashboard.test_planted_keys import DIAGNOSIS, RUN, StandIn, _real
from workers.dashboard import artifacts, benchmarks
from workers.dashboard.app import artifact_url
from workflows.contracts import keys

HUGE = 64 << 20  # over every limit, and large enough that reading it would show in memory
SMALL = 1 << 10  # the limits of the test that plants objects at and just over them


class _Counted:
    """A response body that counts what is read of it and whether it was closed."""

    def __init__(self, body: Any) -> None:
        self.body = body
        self.read_bytes = 0
        self.closed = False

    def read(self, amt: int | None = None) -> bytes:
        chunk = self.body.read(amt)
        self.read_bytes += len(chunk)
        return chunk

    def close(self) -> None:
        self.closed = True
        self.body.close()


class _CountingClient:
    """An S3 client whose get_object answers (real or given) with counted bodies."""

    def __init__(self, client: Any = None, answer: dict[str, Any] | None = None) -> None:
        self.client = client
        self.answer = answer
        self.bodies: list[_Counted] = []

    def get_object(self, **kwargs: Any) -> dict[str, Any]:
        response = dict(self.answer or self.client.get_object(**kwargs))
        self.bodies.append(_Counted(response["Body"]))
        response["Body"] = self.bodies[-1]
        return response


# --- ArtifactStore.get_bytes_at_most ---------------------------------------------------------


def test_get_bytes_at_most_reads_up_to_the_limit_and_refuses_more(s3):
    store = ArtifactStore()
    prefix = f"bounded/{uuid.uuid4().hex[:8]}/"
    for name, size in (("under", SMALL - 1), ("at", SMALL)):
        key = store.put_bytes(prefix + name, b"x" * size)
        assert store.get_bytes_at_most(key, SMALL) == b"x" * size
    key = store.put_bytes(prefix + "over", b"x" * (SMALL + 1))
    with pytest.raises(ObjectTooLarge) as raised:
        store.get_bytes_at_most(key, SMALL)
    assert (raised.value.key, raised.value.size, raised.value.limit) == (key, SMALL + 1, SMALL)
    assert str(raised.value) == f"{key}: 1,025 bytes, over the limit of 1,024 bytes"
    assert isinstance(raised.value, ValueError)


def test_an_object_over_the_limit_is_closed_unread(s3):
    store = ArtifactStore()
    key = store.put_bytes(f"bounded/{uuid.uuid4().hex[:8]}/big", b"x" * (1 << 20))
    counting = _CountingClient(store.client)
    store.client = counting
    with pytest.raises(ObjectTooLarge):
        store.get_bytes_at_most(key, SMALL)
    (body,) = counting.bodies
    assert body.read_bytes == 0 and body.closed


def test_a_wrong_length_cannot_make_it_read_more():
    """A server that states a small length and sends more: read to limit + 1, then refused."""
    store = ArtifactStore(endpoint="http://127.0.0.1:9")  # never reached: the client is faked
    lying = {"ContentLength": 10, "Body": io.BytesIO(b"x" * (1 << 20))}
    store.client = counting = _CountingClient(answer=lying)
    with pytest.raises(ObjectTooLarge) as raised:
        store.get_bytes_at_most("sessions/s/summary.json", SMALL)
    assert raised.value.size == SMALL + 1
    assert counting.bodies[0].read_bytes == SMALL + 1 and counting.bodies[0].closed


# --- the session page and the artifact route --------------------------------------------------


@asynccontextmanager
async def _running(temporal_env: Any, store: ArtifactStore, sid: str) -> AsyncIterator[None]:
    """A stand-in session answering `status` with the real artifacts of test_planted_keys."""
    client = temporal_env.client
    status = _real(store, sid)
    queue = f"dashboard-bounded-{uuid.uuid4().hex[:6]}"
    async with Worker(
        client, task_queue=queue, workflows=[StandIn], workflow_runner=UnsandboxedWorkflowRunner()
    ):
        handle = await client.start_workflow(
            StandIn.run, status, id=sid, task_queue=queue, memo={"prompt": status.prompt}
        )
        for _ in range(100):
            if await handle.query(StandIn.status) is not None:
                break
            await asyncio.sleep(0.1)
        try:
            yield
        finally:
            await handle.terminate()


def _plant_huge(store: ArtifactStore, key: str, folder: Path) -> None:
    """A HUGE object, uploaded from a sparse file so that the test itself holds none of it."""
    path = folder / "huge"
    with path.open("wb") as f:
        f.truncate(HUGE)
    store.put_file(key, path, "application/json")


async def test_a_huge_planted_object_is_named_unread_and_the_page_still_answers(
    open_dashboard, temporal_env, tmp_path
):
    store = ArtifactStore()
    sid = f"pf-bounded-{uuid.uuid4().hex[:8]}"
    run = keys.run_prefix(sid, 1, RUN)
    _plant_huge(store, run + keys.SUMMARY, tmp_path)
    http = Http(open_dashboard)
    async with _running(temporal_env, store, sid):
        tracemalloc.start()
        try:
            started = time.monotonic()
            status, _, body = await http.get(f"/sessions/{sid}")
            took = time.monotonic() - started
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert status == 200, body[:2000]
    page = body.decode()
    assert "Unreadable, not shown: summary.json (67,108,864 bytes, over the 4 MiB limit)" in page
    for real in ("the real reward", DIAGNOSIS, "return 12.5", "term_forward"):
        assert real in page, real
    # Reading the object whole would hold its 64 MiB at once; the page needs a few MiB.
    assert peak < HUGE // 4, f"peak {peak:,} bytes"
    assert took < 20, f"the page took {took:.1f} s"  # loose: two tests share two cores


def _padded(value: Any, size: int) -> bytes:
    """JSON of exactly `size` bytes (spaces after the value)."""
    data = json.dumps(value).encode()
    return data + b" " * (size - len(data))


async def test_objects_just_over_their_limits_are_named_and_those_at_them_show(
    open_dashboard, temporal_env, monkeypatch
):
    for limit in ("RECORD_LIMIT", "SCALARS_LIMIT", "CODE_LIMIT"):
        monkeypatch.setattr(artifacts, limit, SMALL)
    store = ArtifactStore()
    sid = f"pf-bounded-{uuid.uuid4().hex[:8]}"
    run = keys.run_prefix(sid, 2, RUN)  # the running iteration
    over = b"x" * (SMALL + 1)
    for key in (
        keys.reward_key(sid, 2),
        run + keys.SUMMARY,
        run + keys.JUDGMENT,
        run + keys.SCALARS,
    ):
        store.put_bytes(key, over)
    checkpoint = keys.eval_checkpoints_prefix(run) + "50/"
    store.put_bytes(checkpoint + "median.mp4", b"\x00video", "video/mp4")
    returns = {"timesteps": 2048, "picked": {"median": {"return": 7.5}}}
    store.put_bytes(checkpoint + "returns.json", _padded(returns, SMALL))
    http = Http(open_dashboard)
    async with _running(temporal_env, store, sid):
        status, _, body = await http.get(f"/sessions/{sid}")
    assert status == 200, body[:2000]
    page = body.decode()
    why = "(1,025 bytes, over the 1 KiB limit)"
    assert f"Unreadable, not shown: reward_fn.py {why}" in page  # the iteration's code
    names = ", ".join(f"{n} {why}" for n in ("summary.json", "scalars.jsonl", "judgment.json"))
    assert f"Unreadable, not shown: {names}" in page  # the run's files, in one line
    assert "return 7.5" in page  # returns.json at the limit is read
    assert "the real reward" in page and DIAGNOSIS in page  # iteration 1, under the limits
    assert "could not be shown" not in page and "could not be read" not in page


async def test_the_code_route_refuses_code_over_the_limit(open_dashboard, s3, monkeypatch):
    monkeypatch.setattr(artifacts, "CODE_LIMIT", SMALL)
    store = ArtifactStore()
    sid = f"pf-bounded-{uuid.uuid4().hex[:8]}"
    at = store.put_text(keys.reward_key(sid, 1), "#" * (SMALL - 1) + "\n")
    over = store.put_text(keys.reward_key(sid, 2), "#" * SMALL + "\n")
    http = Http(open_dashboard)
    status, headers, body = await http.get(artifact_url(sid, at))
    assert status == 200 and body == b"#" * (SMALL - 1) + b"\n"
    status, headers, body = await http.get(artifact_url(sid, over))
    assert status == 413
    assert body.decode() == (
        "reward_fn.py is too large to show here: 1,025 bytes, over the 1 KiB limit for code.\n"
    )
    assert headers["content-type"].startswith("text/plain")
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-store"


async def test_the_code_route_never_reads_a_huge_file_whole(open_dashboard, tmp_path):
    store = ArtifactStore()
    sid = f"pf-bounded-{uuid.uuid4().hex[:8]}"
    key = keys.reward_key(sid, 1)
    _plant_huge(store, key, tmp_path)
    tracemalloc.start()
    try:
        status, _, body = await Http(open_dashboard).get(artifact_url(sid, key))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 413 and b"67,108,864 bytes, over the 256 KiB limit" in body
    assert peak < HUGE // 4, f"peak {peak:,} bytes"


async def test_a_benchmark_result_over_the_limit_reads_as_no_result(
    open_dashboard, s3, monkeypatch
):
    monkeypatch.setattr(benchmarks, "RESULT_LIMIT", SMALL)
    store = ArtifactStore()
    at, over = (f"pf-bench-{uuid.uuid4().hex[:8]}" for _ in range(2))
    store.put_bytes(keys.benchmark_result_key(at), _padded({"benchmark_id": at}, SMALL))
    store.put_bytes(keys.benchmark_result_key(over), _padded({"benchmark_id": over}, SMALL + 1))
    http = Http(open_dashboard)
    status, _, body = await http.get(f"/api/benchmarks/{at}")
    assert status == 200 and json.loads(body)["benchmark_id"] == at
    status, _, body = await http.get(f"/api/benchmarks/{over}")
    assert status == 404, body  # no workflow and no result it reads: no such benchmark
