"""The three worker pools as three OS processes against one server, connected by env vars only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import start_session

POOLS = {"llm": "author_reward", "train": "train_policy", "judge": "judge_rollout"}


def logged_activities(path: Path) -> set[str]:
    out = set()
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "activity" in record:
            out.add(record["activity"])
    return out


@pytest.mark.slow  # three worker processes
async def test_a_session_runs_across_three_worker_processes(
    temporal_env, s3, queue_prefix, tmp_path: Path
):
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "POLICYFORGE_QUEUE_PREFIX": queue_prefix,
        "POLICYFORGE_TRAIN_CONCURRENCY": "1",
    }
    procs: dict[str, subprocess.Popen] = {}
    logs = {pool: tmp_path / f"{pool}.log" for pool in POOLS}
    try:
        for pool in POOLS:
            with logs[pool].open("w") as log:
                procs[pool] = subprocess.Popen(
                    [sys.executable, "-m", f"workers.{pool}"],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
        handle = await start_session(
            temporal_env.client,
            queue_prefix,
            prompt="run forward as fast as possible",
            env_id="HalfCheetah-v5",
            total_timesteps=1024,
            max_iterations=1,
            eval_max_steps=30,
        )
        result = await handle.result()
        assert len(result.iterations) == 1
        assert result.best.best_run.video_key

        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for pool, proc in procs.items():
            assert proc.wait(timeout=60) == 0, logs[pool].read_text()[-2000:]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    # Each pool did its own share of the work, and only that.
    for pool, activity in POOLS.items():
        done = logged_activities(logs[pool])
        assert activity in done, (pool, done)
        assert (
            done
            <= {
                "llm": {"author_reward", "revise_reward"},
                "train": {"validate_reward", "train_policy", "evaluate_policy"},
                "judge": {"judge_rollout", "record_lesson"},
            }[pool]
        )
