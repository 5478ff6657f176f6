"""The deployment topology without Docker: the dev server, SeaweedFS and the three worker pools
as separate OS processes, connected only by environment variables. The training worker is
killed with SIGKILL mid-run and a new one started: the retried activity resumes from the last
checkpoint in S3 and the session finishes (real server, S3 and PPO)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from activities.artifacts import ArtifactStore
from tests.builders import start_session

CHECKPOINT_EVERY = 4096
TIMESTEPS = 40_960


def start_worker(pool: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", f"workers.{pool}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


def worker_env(temporal_env, queue_prefix: str, checkpoint_every: int) -> dict[str, str]:
    """The environment the pools' processes get: the server, the queues, one training at a
    time, checkpoints every `checkpoint_every` steps."""
    return {
        **os.environ,
        "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "POLICYFORGE_QUEUE_PREFIX": queue_prefix,
        "POLICYFORGE_TRAIN_CONCURRENCY": "1",
        "POLICYFORGE_CHECKPOINT_EVERY": str(checkpoint_every),
    }


async def checkpoint_in_heartbeat(handle, timeout: float = 120) -> dict:
    """The heartbeat details of the running train_policy once they name a checkpoint."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        desc = await handle.describe()
        for pending in desc.raw_description.pending_activities:
            if pending.activity_type.name == "train_policy" and pending.heartbeat_details.payloads:
                details = json.loads(pending.heartbeat_details.payloads[0].data)
                if details.get("checkpoint_key"):
                    return details
        await asyncio.sleep(0.5)
    raise AssertionError("no checkpoint was heartbeated")


async def test_three_worker_processes_survive_a_sigkilled_training_worker(
    temporal_env, s3, queue_prefix, tmp_path
):
    env = worker_env(temporal_env, queue_prefix, CHECKPOINT_EVERY)
    log = tmp_path / "train-worker.log"
    others = [start_worker(p, env, tmp_path / f"{p}-worker.log") for p in ("llm", "judge")]
    first = start_worker("train", env, log)
    second: subprocess.Popen | None = None
    try:
        handle = await start_session(
            temporal_env.client,
            queue_prefix,
            prompt="run forward as fast as possible",
            env_id="HalfCheetah-v5",
            total_timesteps=TIMESTEPS,
            max_iterations=1,
            eval_max_steps=30,
        )
        details = await checkpoint_in_heartbeat(handle)
        killed_at = details["checkpoint_timesteps"]
        assert CHECKPOINT_EVERY <= killed_at < TIMESTEPS
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        second = start_worker("train", env, log)
        result = await asyncio.wait_for(handle.result(), timeout=300)
    finally:
        for proc in (first, second, *others):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()

    run = result.best.best_run
    assert run.timesteps_done >= TIMESTEPS
    summary = json.loads(ArtifactStore().get_text(run.run_prefix + "summary.json"))
    # The second worker continued the counter from a checkpoint at or after the one seen.
    assert summary["resumed_from_timesteps"] is not None
    assert killed_at <= summary["resumed_from_timesteps"] < TIMESTEPS
    assert summary["timesteps_done"] >= TIMESTEPS
    # The scalars of the first attempt survived into the finished run's metrics.
    lines = ArtifactStore().get_text(run.run_prefix + "metrics/scalars.jsonl").splitlines()
    steps = [json.loads(line)["timesteps"] for line in lines]
    assert min(steps) < killed_at and max(steps) >= TIMESTEPS - 4096
    assert "resuming" in log.read_text()
    # The resumed attempt's evaluator kept the last checkpoint and the final episode's video.
    store = ArtifactStore()
    assert run.video_key and store.exists(run.video_key) and store.exists(run.trajectory_key)
    assert store.exists(run.run_prefix + "evals/pct_100/returns.json")
    # No orphan: the killed worker's training child died with it.
    assert (
        "pf-train"
        not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    )
