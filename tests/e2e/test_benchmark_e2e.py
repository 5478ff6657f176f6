"""`policyforge bench` as a person runs it: the real command (a child process) against the real
dev server, real worker pools, real SeaweedFS and real PPO on real MuJoCo, four tiny cases two
at a time. It finishes, prints the pass-rate table, and the JSON in S3 holds the four cases."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest

from activities.artifacts import ArtifactStore
from workers.pools.pools import run_pools
from workers.settings import Settings
from workflows.contracts.benchmark import BenchmarkStatus
from workflows.contracts.keys import benchmark_result_key

# Slow tier: a benchmark of real sessions through the CLI.
pytestmark = pytest.mark.slow

# Four cases the offline author expresses, on the cheapest envs to step and render.
CASES = """env_id,intent,category,difficulty
HalfCheetah-v5,run forward as fast as possible,locomotion,easy
Hopper-v5,jump as high as possible,acrobatic,medium
InvertedPendulum-v5,keep the pole balanced,balance,easy
Swimmer-v5,swim forward,locomotion,easy
"""


async def test_policyforge_bench_runs_a_suite_for_real(temporal_env, s3, queue_prefix, tmp_path):
    cases = tmp_path / "tiny_suite.csv"
    cases.write_text(CASES)
    bid = f"{queue_prefix}-bench"
    settings = Settings(queue_prefix=queue_prefix, train_concurrency=2)
    pools = asyncio.create_task(
        run_pools(temporal_env.client, settings, ["llm", "train", "judge"], handle_signals=False)
    )
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "POLICYFORGE_QUEUE_PREFIX": queue_prefix,
        "COLUMNS": "200",  # the table's columns, unwrapped
    }
    env.pop("TEMPORAL_PROFILE", None)
    begun = time.monotonic()
    try:
        command = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "workers.cli", "bench", str(cases)),
            *("--id", bid, "--max-parallel", "2", "--llm", "offline"),
            *("--timesteps", "2048", "--max-iterations", "1", "--eval-steps", "40"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=Path(__file__).resolve().parents[2],
        )
        out_bytes, err_bytes = await asyncio.wait_for(command.communicate(), timeout=600)
    finally:
        pools.cancel()
        await asyncio.gather(pools, return_exceptions=True)
    wall = time.monotonic() - begun
    out, err = out_bytes.decode(), err_bytes.decode()
    print(out, f"policyforge bench: 4 cases in {wall:.0f} s", sep="\n")
    assert command.returncode == 0, err + out

    # Progress while it ran, then the table: overall and each group, and where the JSON is.
    assert "cases done" in out, out
    assert f"benchmark {bid}" in out
    for row in ("overall", "locomotion", "acrobatic", "balance", "easy", "medium"):
        assert row in out, row
    for env_id in ("HalfCheetah-v5", "Hopper-v5", "InvertedPendulum-v5", "Swimmer-v5"):
        assert env_id in out, env_id
    key = benchmark_result_key(bid)
    assert f"result JSON: s3://{os.environ['POLICYFORGE_BUCKET']}/{key}" in out

    stored = BenchmarkStatus.model_validate(json.loads(ArtifactStore().get_text(key)))
    assert stored.stage == "done" and stored.result_key == key
    assert [c.session_id for c in stored.cases] == [f"{bid}-{i}" for i in (1, 2, 3, 4)]
    # Every case trained and was judged: one iteration each, a score, no failure.
    for case in stored.cases:
        assert case.status in ("passed", "not_passed"), (case.status, case.error)
        assert case.iterations == 1 and case.best_score is not None
        assert case.wall_seconds is not None and case.wall_seconds > 0
        assert case.model_label == "offline (no LLM)" and case.cost_usd == 0.0
        assert (case.iterations_to_pass == 1) == case.passed
    overall = stored.overall
    assert (overall.cases, overall.finished) == (4, 4)
    assert overall.passed == sum(c.passed for c in stored.cases)
    assert overall.pass_rate == overall.passed / 4
    assert stored.by_category["locomotion"].cases == 2
    assert set(stored.by_difficulty) == {"easy", "medium"}
    assert stored.settings["total_timesteps"] == 2048 and stored.settings["max_parallel"] == 2
    assert stored.wall_seconds is not None and stored.wall_seconds < wall
