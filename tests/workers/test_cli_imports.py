"""`policyforge --help`, `status` and `sessions` import what they need, not the trainer, the
simulator or the LLM SDKs (issue 43 point 5: they answer within a second). An import check in a
fresh interpreter, each command run through the CLI's own body against the real Temporal dev
server; how long they take is measured and reported, never asserted."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflows.test_session import Script, session

# Never for these commands: the trainer and the simulator (seconds to import).
HEAVY = ("torch", "gymnasium", "mujoco", "stable_baselines3")
# Nor the model providers' SDKs or the dashboard's server.
UNUSED = ("anthropic", "openai", "google.genai", "fastapi", "uvicorn", "av")
# `--help` builds the parser only: no Temporal client, no S3 client.
NOT_FOR_HELP = (*HEAVY, *UNUSED, "temporalio", "boto3", "botocore")

# The command's body (`main` without its hard exit), then the modules it left loaded.
SCRIPT = """
import json, os, sys
from workers.cli.main import _main
try:
    _main(sys.argv[2:])
except SystemExit:
    pass
with open(sys.argv[1], "w") as f:
    json.dump(sorted(sys.modules), f)
sys.stdout.flush()
os._exit(0)
"""


def run_command(tmp_path: Path, *args: str, **env: str) -> tuple[set[str], str]:
    """The modules `policyforge ARGS` loaded, and what it printed, in a fresh interpreter with
    a home of its own (no dev record, no Temporal profile) and only `env` of Temporal's, S3's
    and policyforge's settings."""
    out = tmp_path / "modules.json"
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "AWS_", "POLICYFORGE_"))
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "HOME": str(tmp_path), "COLUMNS": "80", **env},
        cwd=tmp_path,
    )
    assert out.exists(), proc.stderr
    return set(json.loads(out.read_text())), proc.stdout


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize(
    "args", [["--help"], ["status", "--help"], ["sessions", "--help"], ["run", "--help"]]
)
def test_help_imports_no_client_trainer_or_simulator(tmp_path: Path, args: list[str]):
    modules, printed = run_command(tmp_path, *args)
    assert "usage: policyforge" in printed
    assert loaded(modules, NOT_FOR_HELP) == []


async def test_status_and_sessions_import_no_trainer_or_simulator(
    temporal_env, queue_prefix, tmp_path: Path
):
    client = temporal_env.client
    memo = {"prompt": "run forward"}
    async with session(temporal_env, queue_prefix, Script(scores=[0.9]), memo=memo) as handle:
        result = await handle.result()
    assert result.passed and result.best is not None and result.best.best_run.video_key
    server = {
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "POLICYFORGE_QUEUE_PREFIX": queue_prefix,
        # The report presigns the video's link: keys to sign with, nothing asked of a network.
        "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
    }
    commands = {
        "status": ["status", handle.id],
        "status --json": ["status", handle.id, "--json"],
        "sessions": ["sessions", "--limit", "50"],
        "sessions --json": ["sessions", "--json"],
    }
    printed = {}
    for name, args in commands.items():
        modules, printed[name] = await asyncio.to_thread(run_command, tmp_path, *args, **server)
        # The command did its work (the session's report, its row), not an early error.
        assert handle.id in printed[name], (name, printed[name])
        assert loaded(modules, (*HEAVY, *UNUSED)) == [], name
    assert "PASSED" in printed["status"] and "/videos/eval.mp4" in printed["status"]
