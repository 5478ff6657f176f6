"""The demo prints no link that dies with it, says what stays, and its suggested command works
(issue 43)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.workers.test_dev import CLI, newcomer

pytestmark = pytest.mark.slow  # a real session on embedded services


def test_the_demo_leaves_files_and_a_command_that_plays_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = newcomer(home)
    demo = subprocess.run(
        [*CLI, "demo", "--timesteps", "4096"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=home,
    )
    assert demo.returncode in (0, 1), demo.stderr  # passed or not: it ran to its end
    end = demo.stdout[demo.stdout.index("demo finished") :]
    # Nothing it prints once its services are gone points at them.
    assert not re.search(r"https?://|s3://", end), end
    stays = home / "demo-output"
    for name in ("policy.zip", "vecnormalize.npz", "summary.json", "eval.mp4", "reward_fn.py"):
        assert (stays / name).is_file(), name
        assert name in end
    command = re.search(r"watch it: policyforge (play \S+)", end)
    assert command, end
    out = tmp_path / "played.mp4"
    play = subprocess.run(
        [*CLI, *command.group(1).split(), "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=home,
    )
    assert play.returncode == 0, play.stderr
    assert json.loads(play.stdout)["env_id"] == "HalfCheetah-v5"
