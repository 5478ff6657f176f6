"""Objects planted under a session's folder (odd names, non-UTF-8, malformed JSON, wrong
shapes) never turn its page or its answers into a 500: what cannot be read is skipped or
named as unreadable, and the real artifacts still show (real SeaweedFS and Temporal)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

import pytest
from temporalio import workflow
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.artifacts import ArtifactStore
from tests.workers.dashboard.client import Http
from workers.dashboard.app import artifact_url
from workflows.contracts import keys
from workflows.contracts.session import IterationRecord, RunRecord, SessionStatus

RUN = "c0_default_seed_0"
DIAGNOSIS = "the real diagnosis of the judge"
CODE = "def reward():\n    return 1.0  # the real reward\n"
BAD_UTF8 = b"\xff\xfe\x80 not text"
DEEP = b"[" * 100_000
WRONG_RETURNS = b'{"picked": {"median": {"return": "x"}}, "timesteps": 1.5}'


@workflow.defn(name="SessionWorkflow")
class StandIn:
    """Answers `status` with what the test planted."""

    def __init__(self) -> None:
        self._status: SessionStatus | None = None

    @workflow.run
    async def run(self, status: SessionStatus) -> None:
        self._status = status
        await workflow.wait_condition(lambda: False)

    @workflow.query
    def status(self) -> SessionStatus | None:
        return self._status


def _real(store: ArtifactStore, sid: str) -> SessionStatus:
    """Iteration 1 finished, with code, curves, a judgment, an eval video and a checkpoint's
    median video; iteration 2 running."""
    run = keys.run_prefix(sid, 1, RUN)
    store.put_text(keys.reward_key(sid, 1), CODE)
    rows = [{"timesteps": t, "ep_return_mean": t / 1000, "term_forward": 0.1} for t in (2048, 4096)]
    store.put_text(run + keys.SCALARS, "".join(json.dumps(r) + "\n" for r in rows))
    judgment = {"score": 0.5, "passed": False, "diagnosis": DIAGNOSIS, "criteria": []}
    store.put_text(run + keys.JUDGMENT, json.dumps(judgment))
    store.put_bytes(run + keys.VIDEO, b"\x00video", "video/mp4")
    checkpoint = keys.eval_checkpoints_prefix(run) + "50/"
    store.put_bytes(checkpoint + "median.mp4", b"\x00video", "video/mp4")
    picked = {"median": {"return": 12.5}}
    store.put_text(checkpoint + "returns.json", json.dumps({"timesteps": 2048, "picked": picked}))
    best = RunRecord(
        run_name=RUN,
        seed=0,
        run_prefix=run,
        model_key=run + keys.MODEL,
        vecnormalize_key=run + keys.VECNORMALIZE,
        video_key=run + keys.VIDEO,
        trajectory_key=run + keys.TRAJECTORY,
        timesteps_done=4096,
        score=0.5,
        passed=False,
    )
    record = IterationRecord(
        iteration=1,
        reward_key=keys.reward_key(sid, 1),
        reward_summary="summary",
        latex="r = 1",
        timesteps=4096,
        score=0.5,
        passed=False,
        diagnosis="diagnosis",
        best_run=best,
    )
    return SessionStatus(
        session_id=sid,
        prompt="run forward",
        env_id="HalfCheetah-v5",
        model_label="offline",
        stage="training",
        iteration=2,
        max_iterations=3,
        timesteps_done=0,
        timesteps_target=4096,
        best_score=0.5,
        best_iteration=1,
        iterations=[record],
    )


def _planted(sid: str) -> dict[str, bytes]:
    """Keys (under the session's folder) and contents nothing in policyforge writes."""
    one = f"iter_1/{RUN}/"
    two = f"iter_2/{RUN}/"
    junk_lines = b'{"timesteps": "abc"}\n[1, 2]\n' + DEEP + b'\n{"timesteps": {}}\n'
    planted = {
        "iter_x/c0_default_seed_0/judgment.json": b"{}",
        f"{one}videos/a\x1b.mp4": b"x",
        f"{one}videos/{'L' * 200}.mp4": b"x",
        f"{one}evals/pct_x/median.mp4": b"x",
        f"{one}evals/pct_\u00b2/p10.mp4": b"x",  # a superscript two: isdigit(), not int()
        f"{one}synthesis/turn_x.json": b"{}",
        f"{one}synthesis/turn_.json": b"{}",
        "iter_1/c\x1b_seed_/metrics/scalars.jsonl": BAD_UTF8,
        # The running iteration: every file it reads is there, and none is what it should be.
        "iter_2/reward.py": BAD_UTF8,
        f"{two}judgment.json": BAD_UTF8,
        f"{two}visual_judgment.json": b'{"score": "high", "verdicts": 3}',
        f"{two}summary.json": DEEP,
        f"{two}checkpoints/step_\u00b2/scalars.jsonl": b"{}",
        f"{two}checkpoints/step_x/scalars.jsonl": b"{}",
        f"{two}checkpoints/step_10/scalars.jsonl": junk_lines,
        f"{two}evals/pct_50/returns.json": b"[1, 2]",
        f"{two}evals/pct_50/median.mp4": b"x",
        f"{two}evals/pct_60/returns.json": WRONG_RETURNS,
        f"{two}evals/pct_60/median.mp4": b"x",
        f"{two}evals/pct_70/returns.json": b'{"picked": [1]}',
        f"{two}synthesis/turn_1.json": BAD_UTF8,
    }
    return {keys.session_prefix(sid) + k: v for k, v in planted.items()}


@pytest.fixture
async def session(temporal_env, s3) -> AsyncIterator[str]:
    """A running stand-in session with real artifacts and the planted ones."""
    client = temporal_env.client
    sid = f"pf-planted-{uuid.uuid4().hex[:8]}"
    queue = f"dashboard-planted-keys-{uuid.uuid4().hex[:6]}"
    store = ArtifactStore()
    status = _real(store, sid)
    for key, data in _planted(sid).items():
        store.put_bytes(key, data, "application/octet-stream")
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
            yield sid
        finally:
            await handle.terminate()


async def test_planted_keys_leave_the_session_page_and_its_answers_whole(open_dashboard, session):
    sid = session
    http = Http(open_dashboard)
    status, _, body = await http.get(f"/sessions/{sid}")
    assert status == 200, body[:2000]
    page = body.decode()
    run = keys.run_prefix(sid, 1, RUN)
    for real in (
        "the real reward",  # the code
        DIAGNOSIS,  # the code judge
        artifact_url(sid, run + keys.VIDEO),  # the eval video
        artifact_url(sid, keys.eval_checkpoints_prefix(run) + "50/median.mp4"),
        "return 12.5",  # the checkpoint video's return
        "term_forward",  # the curves
    ):
        assert real in page, real
    assert "\x1b" not in page
    # Read and rendered by the checks, not caught by the last-resort guards.
    assert "could not be shown" not in page and "could not be read" not in page
    # What is there but cannot be read is named, in one line each.
    for name in ("summary.json", "pct_50/returns.json", "judgment.json", "visual_judgment.json"):
        assert name in page, name
    assert page.count("Unreadable, not shown:") == 1  # iteration 2's run, in one line
    for path in (f"/api/sessions/{sid}/parts", f"/api/sessions/{sid}", "/api/sessions"):
        status, _, body = await http.get(path)
        assert status == 200, (path, body[:2000])
    status, _, body = await http.get(f"/api/sessions/{sid}/parts")
    assert DIAGNOSIS in json.loads(body)["parts"]["iter-1"]
