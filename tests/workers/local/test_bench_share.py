"""`policyforge bench-share`: two runs at once against each alone, on one env or on two, as the
bare training child or beside its evaluator (a session's training)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from workers.local.bench_share import FAIR_SHARE, Speeds, bench_share, report


def bench_share_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MUJOCO_GL": "egl"}
    cmd = [sys.executable, "-m", "workers.cli", "bench-share", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def test_fair_means_each_run_keeps_the_share_of_its_speed_alone():
    assert Speeds([1000.0, 2000.0], [400.0, 800.0]).fair()
    assert not Speeds([1000.0, 2000.0], [400.0, 790.0]).fair()
    assert Speeds([1000.0, 2000.0], [400.0, 790.0]).ratios() == pytest.approx([0.4, 0.395])
    assert FAIR_SHARE == 0.4


def test_the_report_names_each_run_s_env_and_what_ran_beside_it():
    lines = report(
        ("HalfCheetah-v5", "Walker2d-v5"),
        "worker",
        Speeds([4546.0, 3950.0], [4691.0, 1200.0]),
        with_eval=True,
    )
    assert "each beside its evaluator" in lines[0] and "one train worker" in lines[0]
    assert (
        lines[1] == "  run 0 (HalfCheetah-v5): alone 4,546 steps/s, together 4,691 steps/s (103%)"
    )
    assert lines[2].startswith("  run 1 (Walker2d-v5)") and lines[2].endswith("(30%)")
    assert lines[3].startswith("  NOT fair")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ("Hopper-v5,Ant-v5,Reacher-v5", "--env: 3 envs given; give one env, or two"),
        ("Hopper-v5,Nope-v1", "Nope-v1"),
    ],
)
def test_bad_envs_are_one_line(env: str, message: str):
    run = bench_share_cli("--env", env, "--timesteps", "1000")
    lines = run.stderr.strip().splitlines()
    assert run.returncode != 0 and len(lines) == 1, run.stderr
    assert lines[0].startswith("error: ") and message in lines[0]


@pytest.mark.slow
def test_two_bodies_beside_their_evaluators_train_alone_and_together():
    speeds = asyncio.run(
        bench_share(("InvertedPendulum-v5", "Reacher-v5"), 2048, "worker", with_eval=True)
    )
    assert len(speeds.alone) == len(speeds.together) == 2
    assert all(s > 0 for s in [*speeds.alone, *speeds.together])
