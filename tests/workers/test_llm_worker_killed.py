"""An llm worker SIGKILLed while the video judge waits for its model is replaced: the pool beats
for each provider call (workers/pools/heartbeats.py), so the server notices the dead attempt
within the heartbeat timeout and the retry judges the video on the new worker within a minute of
its start, not after the call's 6-minute start-to-close. (Real Temporal dev server, SeaweedFS,
the llm pool as an OS process; the provider is the fake server, reached by the real SDK.)"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from temporalio.worker import Worker

from activities.artifacts import ArtifactStore
from activities.training.video import Mp4Writer
from tests.fakes.llm_server import FakeLLMServer, Hang, Tools
from tests.one_activity import OneActivity, retried_after_heartbeat_timeout
from tests.processes import start_worker, worker_env
from workflows.contracts import timeouts
from workflows.contracts.judging import VisualCriterion, VisualJudgment
from workflows.contracts.llm import VlmJudgeRequest
from workflows.contracts.queues import task_queue

# Slow tier: a worker process started twice and a heartbeat timeout waited out (~60 s).
pytestmark = pytest.mark.slow

CRITERIA = [VisualCriterion(name="runs_forward", look_for="the body moves to the right")]
VERDICTS = {"verdicts": [{"name": "runs_forward", "verdict": "met", "reason": "moves right"}]}


def _video(tmp_path: Path) -> bytes:
    path = tmp_path / "eval.mp4"
    writer = Mp4Writer(path, 20)
    for i in range(20):
        frame = np.zeros((64, 64, 3), dtype=np.uint8)
        frame[:, (i * 3) % 64 :] = 200
        writer.add(frame)
    writer.close()
    return path.read_bytes()


async def test_an_llm_worker_killed_mid_video_judging_is_retried_within_a_minute(
    temporal_env, s3, queue_prefix, tmp_path: Path
):
    assert timeouts.for_activity("vlm_judge").heartbeat == timedelta(seconds=30)
    sid = f"vk-{uuid.uuid4().hex[:8]}"
    key = ArtifactStore().put_bytes(f"sessions/{sid}/iter_1/r/videos/eval.mp4", _video(tmp_path))
    req = VlmJudgeRequest(
        session_id=sid,
        prompt="run forward",
        llm_model="gemini-2.5-pro",
        video_key=key,
        criteria=CRITERIA,
    )
    log = tmp_path / "llm-worker.log"
    client = temporal_env.client
    with FakeLLMServer() as server:
        # The first attempt's model never answers in time; the retry's answers at once.
        server.push("gemini", Hang(600), Tools([("submit_visual_judgment", VERDICTS)]))
        env = worker_env(temporal_env, queue_prefix, 2048) | {
            "POLICYFORGE_METRICS_PORT": "0",
            "GEMINI_API_KEY": "g-key",
            "GOOGLE_GEMINI_BASE_URL": server.base_url("gemini"),
        }
        first = start_worker("llm", env, log)
        second = None
        try:
            async with Worker(client, task_queue=f"{queue_prefix}-wf", workflows=[OneActivity]):
                handle = await client.start_workflow(
                    OneActivity.run,
                    args=["vlm_judge", req, task_queue("llm", queue_prefix), True],
                    id=f"vlm-kill-{uuid.uuid4().hex[:8]}",
                    task_queue=f"{queue_prefix}-wf",
                )
                loop = asyncio.get_running_loop()
                deadline = loop.time() + 120
                while not server.requests_for("gemini"):  # the model is asked and waits
                    assert loop.time() < deadline, "the video was never sent to the model"
                    await asyncio.sleep(0.1)
                # The attempt told the server it lives while its call waits.
                await asyncio.sleep(1)
                desc = await handle.describe()
                [pending] = desc.raw_description.pending_activities
                assert pending.attempt == 1 and pending.HasField("last_heartbeat_time")

                first.send_signal(signal.SIGKILL)  # as a power loss would
                first.wait(10)
                second = start_worker("llm", env, log)
                restarted_at = time.time()
                judged = VisualJudgment.model_validate(
                    await asyncio.wait_for(handle.result(), timeout=240)
                )
        finally:
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()

    # Judged by the second attempt, after the first one's heartbeat timed out.
    after_restart = await retried_after_heartbeat_timeout(handle) - restarted_at
    print(f"video judged {after_restart:.1f} s after the llm worker's restart")
    assert after_restart < 90
    assert judged.verdicts[0].verdict == "met" and judged.score == pytest.approx(1.0)
