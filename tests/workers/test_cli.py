"""What a person sees from the `policyforge` command on bad input: one line naming the problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workers.dev.services import free_port

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


TALL = [{"name": "tall", "description": "stands tall", "metric": "mean_height", "target": 1.3}]


def _tall(tmp_path: Path) -> tuple[str, ...]:
    criteria = tmp_path / "criteria.json"
    criteria.write_text(json.dumps(TALL))
    return ("--env", "Hopper-v5", "--criteria", str(criteria), "--steps", "200")


def test_check_judge_runs_a_sessions_validation_and_accepts_a_judge_that_measures(
    tmp_path: Path,
):
    measuring = tmp_path / "judge_fn.py"
    measuring.write_text(
        "import numpy as np\nimport primitives as P\n"
        "def judge_fn(t):\n"
        "    h = float(np.mean(P.height('Hopper-v5', t)))\n"
        "    score = 1.0 if h >= 1.3 else min(0.99, h / 1.3)\n"
        "    return {'criteria': {'tall': score}, 'measured': {'tall': h},"
        " 'diagnosis': 'height', 'failure_tags': []}\n"
    )
    proc = run_cli("check-judge", str(measuring), *_tall(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "accepted"
    assert "an episode of zero actions for " in proc.stdout and "sandbox layers: " in proc.stdout


def test_check_judge_sends_back_a_judge_that_passes_random_actions(tmp_path: Path):
    # The judge check-judge printed OK for before: it scores random actions 1.0 and reports
    # the target as measured.
    lenient = tmp_path / "lenient.py"
    lenient.write_text(
        "def judge_fn(t):\n"
        "    return {'score': 1.0, 'criteria': {'tall': 1.0}, 'measured': {'tall': 1.3},"
        " 'diagnosis': 'tall', 'failure_tags': []}\n"
    )
    proc = run_cli("check-judge", str(lenient), *_tall(tmp_path))
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    assert first.startswith("sent back: On an episode of random actions for "), first
    assert "tall: the judge measured 1.3 m, the behaviour library (mean_height) " in first


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"env": "Hopperr-v5"}, "--env: unknown environment"),
        ({"file": "missing.py"}, "FILE: "),
        ({"criteria": "missing.json"}, "--criteria: "),
        ({"criteria_text": "[{"}, "is not JSON"),
        ({"criteria_text": '[{"name": "x", "description": "d"}]'}, "criterion 1 field target:"),
        (
            {"criteria_text": '[{"name": "x", "description": "d", "target": 1, "metric": "m"}]'},
            "criterion 1 field metric: 'm' is not a behaviour-library metric of Hopper-v5",
        ),
    ],
)
def test_check_judge_bad_input_is_one_line_naming_the_field(
    tmp_path: Path, change: dict[str, str], expected: str
):
    judge = tmp_path / "judge_fn.py"
    judge.write_text("def judge_fn(t):\n    return {}\n")
    criteria = tmp_path / "criteria.json"
    criteria.write_text(change.get("criteria_text", json.dumps(TALL)))
    proc = run_cli(
        "check-judge",
        str(tmp_path / change.get("file", "judge_fn.py")),
        "--env",
        change.get("env", "Hopper-v5"),
        "--criteria",
        str(tmp_path / change.get("criteria", "criteria.json")),
    )
    assert expected in one_line_error(proc)


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
