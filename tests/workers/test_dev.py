"""The README's everyday path: `policyforge dev` in one terminal, `policyforge run` in another."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

import pytest

from workers.services import free_port, port_in_use

CLI = [sys.executable, "-m", "workers.cli"]
# Set by other fixtures in this process; `dev` must embed its own services instead.
_EXTERNAL = ("TEMPORAL_ADDRESS", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "POLICYFORGE_BUCKET")


def dev_env(state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _EXTERNAL}
    env.update(
        POLICYFORGE_STATE_DIR=str(state),
        POLICYFORGE_TEMPORAL_PORT=str(free_port()),
        POLICYFORGE_S3_PORT=str(free_port()),
        POLICYFORGE_UI_PORT=str(free_port()),
        POLICYFORGE_DASHBOARD_PORT=str(free_port()),
        POLICYFORGE_METRICS_PORT="0",
        POLICYFORGE_TRAIN_CONCURRENCY="1",
    )
    return env


def wait_for_line(proc: subprocess.Popen, text: str, timeout: float) -> list[str]:
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"dev exited ({proc.poll()}) before {text!r}: {seen}")
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"no {text!r} within {timeout}s: {seen}")


@pytest.mark.slow  # policyforge dev as a process, a session through it
def test_dev_then_run_then_status_then_ctrl_c(tmp_path: Path):
    env = dev_env(tmp_path / "state")
    dev = subprocess.Popen(
        [*CLI, "dev"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        banner = "".join(wait_for_line(dev, "Stop with Ctrl-C", timeout=120))
        assert f"127.0.0.1:{env['POLICYFORGE_TEMPORAL_PORT']}" in banner
        assert "embedded SeaweedFS" in banner
        assert f"http://localhost:{env['POLICYFORGE_UI_PORT']}" in banner
        dashboard = f"http://localhost:{env['POLICYFORGE_DASHBOARD_PORT']}"
        assert f"Dashboard  {dashboard}" in banner

        run = subprocess.run(
            [
                *CLI,
                "run",
                "run forward as fast as possible",
                "--env",
                "HalfCheetah-v5",
                "--timesteps",
                "1024",
                "--max-iterations",
                "1",
                "--eval-steps",
                "30",
                "--json",
                "--id",
                "dev-run-1",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        result = json.loads(run.stdout)
        assert run.returncode == (0 if result["passed"] else 1), run.stderr
        assert result["session_id"] == "dev-run-1"
        assert result["model_label"] == "offline (no LLM)"
        assert len(result["iterations"]) == 1
        assert result["best"]["best_run"]["video_key"].endswith("videos/eval.mp4")
        assert f"dashboard: {dashboard}/sessions/dev-run-1" in run.stderr + run.stdout

        # The session is in the dashboard's list, with its prompt, and its page opens.
        listed = json.loads(urlopen(f"{dashboard}/api/sessions", timeout=30).read())["sessions"]
        row = next(r for r in listed if r["session_id"] == "dev-run-1")
        assert row["prompt"] == "run forward as fast as possible" and row["stage"] == "done"
        page = urlopen(f"{dashboard}/sessions/dev-run-1", timeout=30).read().decode()
        assert "run forward as fast as possible" in page and "eval-video" in page

        status = subprocess.run(
            [*CLI, "status", "dev-run-1", "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["best_score"] == result["best_score"]

        # Ctrl-C stops the workers and both embedded servers.
        dev.send_signal(signal.SIGINT)
        assert dev.wait(timeout=60) == 0
        for port in (
            "POLICYFORGE_TEMPORAL_PORT",
            "POLICYFORGE_S3_PORT",
            "POLICYFORGE_DASHBOARD_PORT",
        ):
            assert not port_in_use(int(env[port])), f"{port} still served after Ctrl-C"
        assert (tmp_path / "state" / "temporal.db").exists()
    finally:
        if dev.poll() is None:
            dev.kill()
            dev.wait()
