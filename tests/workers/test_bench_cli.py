"""`policyforge bench`: what a person gets wrong is said in one line before anything starts
(no Temporal server is needed to hear it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "workers.cli", "bench"]


def bench(*args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "TEMPORAL_ADDRESS": "127.0.0.1:1", "HOME": "/tmp"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize(
    ("csv", "args", "message"),
    [
        (None, (), "no-such.csv: no such file; give a CSV of cases"),
        ("env,prompt\nAnt-v5,walk\n", (), "the header has no env_id or instruction column"),
        ("env_id,instruction\nAnt-v5,walk\nFoo-v1,fly\n", (), "csv row 3: env_id: unknown"),
        ("env_id,instruction\nAnt-v5,\n", (), "csv row 2: instruction: is empty"),
        ("env_id,instruction\n", (), "cases: the suite is empty"),
        ("env_id,instruction\nAnt-v5,walk\n", ("--max-parallel", "0"), "max_parallel: must be"),
        ("env_id,instruction\nAnt-v5,walk\n", ("--timesteps", "-1"), "session.total_timesteps"),
        ("env_id,instruction\nAnt-v5,walk\n", ("--llm", "llama3"), "llm_model: unknown model"),
        (
            "env_id,instruction\nAnt-v5,walk\n",
            ("--llm", "claude-sonnet-4-6"),
            "--llm: set ANTHROPIC_API_KEY",
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, csv, args, message):
    path = tmp_path / "no-such.csv"
    if csv is not None:
        path = tmp_path / "cases.csv"
        path.write_text(csv)
    run = bench(str(path), *args)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], run.stderr


def test_good_input_gets_as_far_as_the_server(tmp_path: Path):
    path = tmp_path / "cases.csv"
    path.write_text("env_id,intent,category,difficulty\nHopper-v5,hop forward,locomotion,easy\n")
    run = bench(str(path), "--llm", "offline", "--timesteps", "2048")
    lines = run.stderr.strip().splitlines()
    assert run.returncode != 0 and len(lines) == 1, run.stderr
    assert lines[0].startswith("error: ") and "no Temporal server answers" in lines[0]
