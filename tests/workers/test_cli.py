"""What a person sees from the `policyforge` command on bad input: one line naming the problem."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workers.services import free_port

CLI = [sys.executable, "-m", "workers.cli"]


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}", **env},
    )


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "run forward", "--env", "Cheetah-v9"], "env_id: unknown environment 'Cheetah-v9'"),
        (["run", "", "--env", "HalfCheetah-v5"], "prompt: is empty"),
        (
            ["run", "run forward", "--env", "HalfCheetah-v5", "--timesteps", "0"],
            "total_timesteps: must be a positive",
        ),
        (
            ["run", "run forward", "--env", "Hopper-v5", "--max-iterations", "0"],
            "max_iterations: must be a positive",
        ),
        (
            ["run", "juggle three balls", "--env", "HalfCheetah-v5", "--llm", "offline"],
            "cannot express",
        ),
    ],
)
def test_run_rejects_bad_input_before_connecting(args, expected):
    # No server listens at TEMPORAL_ADDRESS: input errors must be reported before connecting.
    line = one_line_error(run_cli(*args))
    assert expected in line


def test_run_without_a_server_says_how_to_start_one():
    line = one_line_error(
        run_cli("run", "run forward as fast as possible", "--env", "HalfCheetah-v5")
    )
    assert "no Temporal server answers" in line and "policyforge dev" in line


def test_train_rejects_a_reward_file_that_does_not_parse(tmp_path: Path):
    bad = tmp_path / "reward.py"
    bad.write_text("def reward_fn(obs, action, next_obs, info):\n    return (1.0, {\n")
    line = one_line_error(
        run_cli("train", str(bad), "--env", "HalfCheetah-v5", "--timesteps", "100")
    )
    assert "reward.py does not parse: line" in line


def test_train_rejects_unknown_env_and_missing_file(tmp_path: Path):
    line = one_line_error(run_cli("train", str(tmp_path / "nope.py"), "--env", "Nope-v1"))
    assert "--env: unknown environment 'Nope-v1'" in line and "does not exist" in line


def test_run_with_a_model_whose_key_is_missing_names_the_variable():
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.run(
        [*CLI, "run", "run forward", "--env", "HalfCheetah-v5", "--llm", "claude-sonnet-4-6"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}"},
    )
    line = one_line_error(proc)
    assert "ANTHROPIC_API_KEY" in line and "no Temporal server" not in line


def test_run_with_an_unknown_model_says_which_names_work():
    proc = run_cli("run", "run forward", "--env", "HalfCheetah-v5", "--llm", "llama3")
    line = one_line_error(proc)
    assert "llm_model: unknown model 'llama3'" in line and "openai-compatible:" in line


def test_run_with_a_model_whose_key_is_set_gets_past_validation():
    proc = run_cli(
        "run",
        "run forward",
        "--env",
        "HalfCheetah-v5",
        "--llm",
        "gpt-5.1",
        OPENAI_API_KEY="sk-test",
    )
    # Valid input: it got as far as connecting, and says how to start a server.
    assert "no Temporal server answers" in one_line_error(proc)


def test_check_reward_reports_term_magnitudes_or_the_reason(tmp_path: Path):
    good = tmp_path / "reward_fn.py"
    good.write_text(
        "def reward_fn(obs, action, next_obs, info):\n"
        "    v = float(info['x_velocity'])\n"
        "    return v, {'forward': v}\n"
    )
    proc = run_cli("check-reward", str(good), "--env", "HalfCheetah-v5", "--steps", "50")
    assert proc.returncode == 0, proc.stderr
    assert "OK on HalfCheetah-v5" in proc.stdout and "forward" in proc.stdout
    # The layers in force, as this machine gives all of them.
    layers = proc.stdout.split("sandbox layers: ")[1].splitlines()[0]
    assert layers.startswith("clean-env, rlimits, identity, netns, landlock-fs"), layers
    assert "seccomp" in layers and "missing" not in layers

    bad = tmp_path / "bad_reward.py"
    bad.write_text("import socket\ndef reward_fn(obs, action, next_obs, info):\n    return 0, {}\n")
    line = one_line_error(run_cli("check-reward", str(bad), "--env", "HalfCheetah-v5"))
    assert "bad_reward.py line 1: import of 'socket' is not allowed" in line


def test_check_judge_scores_a_random_episode(tmp_path: Path):
    judge = tmp_path / "judge_fn.py"
    judge.write_text(
        "import numpy as np\n"
        "def judge_fn(t):\n"
        "    up = float(np.mean(t['qpos'][:, 1] > 0.8))\n"
        "    return {'score': up, 'criteria': {'tall': up}, 'diagnosis': 'height',"
        " 'failure_tags': []}\n"
    )
    proc = run_cli("check-judge", str(judge), "--env", "Hopper-v5", "--steps", "50")
    assert proc.returncode == 0, proc.stderr
    assert "score" in proc.stdout and "tall" in proc.stdout
    line = one_line_error(run_cli("check-judge", str(judge), "--env", "Hopperr-v5"))
    assert "--env: unknown environment" in line


def test_check_reward_refuses_when_a_required_layer_is_missing(tmp_path: Path):
    good = tmp_path / "reward_fn.py"
    good.write_text("def reward_fn(obs, action, next_obs, info):\n    return 0.0, {'zero': 0.0}\n")
    args = ("check-reward", str(good), "--env", "HalfCheetah-v5", "--steps", "10")
    # As on a kernel without Landlock: refused, in one line naming the layer and the setting.
    line = one_line_error(run_cli(*args, POLICYFORGE_SANDBOX_TEST_DISABLE="landlock-fs"))
    assert "sandbox layer 'landlock-fs' is not available here" in line
    assert "POLICYFORGE_SANDBOX_ALLOW_MISSING=landlock-fs" in line
    # Accepted knowingly: it runs, and says what is missing.
    proc = run_cli(
        *args,
        POLICYFORGE_SANDBOX_TEST_DISABLE="landlock-fs",
        POLICYFORGE_SANDBOX_ALLOW_MISSING="landlock-fs",
    )
    assert proc.returncode == 0, proc.stderr
    assert "missing: landlock-fs: disabled for this test" in proc.stdout
