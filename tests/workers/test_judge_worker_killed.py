"""A judge worker SIGKILLed while it judges (its judge child running in the sandbox) is replaced:
judging heartbeats, so the server notices the dead attempt within the heartbeat timeout and the
retry judges on the new worker within a minute of its start, not after the 5-minute
start-to-close. The new worker's start removes the temporary folders the killed one left.
(Real Temporal dev server, SeaweedFS, the judge pool as an OS process, the real sandbox.)"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.worker import Worker

from activities.artifacts import ArtifactStore
from tests.builders import cheetah_trajectory
from tests.one_activity import OneActivity, retried_after_heartbeat_timeout
from tests.processes import descendants, log_records, start_worker, worker_env
from workflows.contracts import timeouts
from workflows.contracts.judging import Criterion, JudgeRequest, Judgment
from workflows.contracts.queues import task_queue

# Slow tier: a worker process started twice and a heartbeat timeout waited out (~60 s).
pytestmark = pytest.mark.slow

# Judge code that thinks for a few seconds (about 5 s here) before it measures.
SLOW_JUDGE = """
import numpy as np

def judge_fn(trajectory):
    total = 0
    for i in range(40_000_000):
        total += i % 7
    vx = float(np.mean(trajectory["info_x_velocity"]))
    speed = min(max(vx / 2.0, 0.0), 1.0)
    return {
        "criteria": {"speed": speed},
        "measured": {"speed": vx},
        "diagnosis": f"mean forward velocity {vx:.2f} m/s ({total % 2})",
        "failure_tags": [] if speed >= 1 else ["too_slow"],
    }
"""
CRITERIA = [Criterion(name="speed", description="fast", target=2.0, unit="m/s")]


def _judging(pid: int) -> bool:
    """Whether the worker `pid` runs a judge child now (forked from its template, named after
    the mode; or exec'd fresh, the job module on its command line)."""
    for child in descendants(pid):
        try:
            comm = Path(f"/proc/{child}/comm").read_text().strip()
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if comm == "pf-judge" or b"activities.judging.job" in cmdline:
            return True
    return False


async def _wait_for(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"no {what} within {timeout:.0f} s")
        await asyncio.sleep(0.1)


async def test_a_judge_worker_killed_mid_judging_is_retried_within_a_minute(
    temporal_env, s3, queue_prefix, tmp_path: Path
):
    assert timeouts.JUDGE.heartbeat == timedelta(seconds=30)
    store = ArtifactStore()
    sid = f"jk-{uuid.uuid4().hex[:8]}"
    traj_key = f"sessions/{sid}/iter_1/c0_default_seed_0/trajectories/eval.npz"
    store.put_bytes(traj_key, cheetah_trajectory(vx=1.0))
    req = JudgeRequest(
        env_id="HalfCheetah-v5",
        trajectory_key=traj_key,
        criteria=CRITERIA,
        pass_threshold=0.8,
        judge_key=store.put_text(f"sessions/{sid}/judge_fn.py", SLOW_JUDGE),
    )
    temp = tmp_path / "tmp"  # the workers' TMPDIR: where their worker folders are made
    temp.mkdir()
    env = worker_env(temporal_env, queue_prefix, 2048) | {
        "POLICYFORGE_METRICS_PORT": "0",
        "TMPDIR": str(temp),
    }
    log = tmp_path / "judge-worker.log"
    client = temporal_env.client
    first = start_worker("judge", env, log)
    second = None
    try:
        async with Worker(client, task_queue=f"{queue_prefix}-wf", workflows=[OneActivity]):
            handle = await client.start_workflow(
                OneActivity.run,
                args=["judge_rollout", req, task_queue("judge", queue_prefix), False],
                id=f"judge-kill-{uuid.uuid4().hex[:8]}",
                task_queue=f"{queue_prefix}-wf",
            )

            async def judging() -> bool:
                return _judging(first.pid)

            await _wait_for(judging, 180, "judge child on the first worker")
            # The attempt told the server it lives (its first beat is at once).
            desc = await handle.describe()
            [pending] = desc.raw_description.pending_activities
            assert pending.attempt == 1 and pending.HasField("last_heartbeat_time")
            killed_folders = list(temp.glob(f"pf-worker-{first.pid}-*"))
            assert len(killed_folders) == 1 and list(killed_folders[0].glob("pf-judge-*"))

            first.send_signal(signal.SIGKILL)  # as a power loss would
            first.wait(10)
            second = start_worker("judge", env, log)
            restarted_at = time.time()
            judgment = Judgment.model_validate(await asyncio.wait_for(handle.result(), timeout=240))

        # Completed by the second attempt, after the first one's heartbeat timed out.
        after_restart = await retried_after_heartbeat_timeout(handle) - restarted_at
        print(f"judged {after_restart:.1f} s after the judge worker's restart")
        assert after_restart < 90
        assert judgment.criteria[0].value == pytest.approx(1.0)
        assert not judgment.passed and judgment.failure_tags == ["too_slow"]

        # The new worker's start removed the killed worker's folder, in one line.
        assert not killed_folders[0].exists()
        removed = [
            r
            for r in log_records(log)
            if r.get("event") == "removed the temporary folders of workers that are gone"
        ]
        assert removed and removed[0]["folders"] >= 1 and removed[0]["bytes"] > 0, removed
        # A worker stopped cleanly removes its own.
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0
        assert list(temp.glob("pf-worker-*")) == [], json.dumps(sorted(map(str, temp.iterdir())))
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
