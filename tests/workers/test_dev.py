"""The README's everyday path: `policyforge dev` in one terminal (here on ports of its own, none
the defaults), and in another, with no settings at all, `run`, `status`, `sessions`, `play` and
the public import: each finds dev through its record, and every link printed opens."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.request import urlopen

import av
import pytest

from workers.dev.services import free_port, port_in_use

# Slow tier: `policyforge dev` as a process, and a real session through it.
pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "workers.cli"]
SESSION = "dev-run-1"
WAITING = "dev-wait-1"
EVAL_STEPS = 30
PORTS = ("TEMPORAL", "S3", "UI", "DASHBOARD")


def newcomer(home: Path) -> dict[str, str]:
    """A shell with no Temporal, S3 or policyforge settings (other fixtures of this test
    process set some), its home a folder of its own: no Temporal profile, no other record."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "AWS_", "POLICYFORGE_"))
    }
    return {**env, "HOME": str(home), "MUJOCO_GL": "egl"}


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


@dataclass
class Stack:
    home: Path
    ports: dict[str, int]
    dev: subprocess.Popen
    banner: str
    run: subprocess.CompletedProcess
    result: dict

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """A command in the other terminal: nothing set but HOME."""
        return subprocess.run(
            [*CLI, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=newcomer(self.home),
            cwd=self.home,
        )

    def url(self, name: str) -> str:
        return f"http://localhost:{self.ports[name]}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("home")
    ports = {name: free_port() for name in PORTS}
    env = {
        **newcomer(home),
        **{f"POLICYFORGE_{name}_PORT": str(port) for name, port in ports.items()},
        "POLICYFORGE_METRICS_PORT": "0",
        "POLICYFORGE_TRAIN_CONCURRENCY": "1",
    }
    dev = subprocess.Popen(
        [*CLI, "dev"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        banner = "".join(wait_for_line(dev, "Stop with Ctrl-C", timeout=120))
        stack = Stack(home, ports, dev, banner, subprocess.CompletedProcess([], 0), {})
        stack.run = stack.cli(
            "run",
            "run forward as fast as possible",
            "--env",
            "HalfCheetah-v5",
            "--timesteps",
            "1024",
            "--max-iterations",
            "1",
            "--eval-steps",
            str(EVAL_STEPS),
            "--json",
            "--id",
            SESSION,
            timeout=300,
        )
        stack.result = json.loads(stack.run.stdout)
        yield stack
    finally:
        if dev.poll() is None:
            dev.kill()
            dev.wait()


def links(text: str) -> list[str]:
    return re.findall(r"https?://[^\s)]+", text)


def answers(url: str) -> int:
    with urlopen(url, timeout=30) as response:
        return response.status


def test_run_and_status_print_links_that_open(stack: Stack):
    assert f"127.0.0.1:{stack.ports['TEMPORAL']}" in stack.banner
    assert "embedded SeaweedFS" in stack.banner
    assert f"Web UI     {stack.url('UI')}" in stack.banner
    assert f"Dashboard  {stack.url('DASHBOARD')}" in stack.banner
    record = stack.home / ".policyforge" / "dev.json"
    assert f"Record     {record}" in stack.banner and record.exists()
    # The state folder is this user's alone (issue 42), and so are the record and the database.
    assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700
    for private in (record, record.parent / "temporal.db"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private

    result, run = stack.result, stack.run
    assert run.returncode == (0 if result["passed"] else 1), run.stderr
    assert result["session_id"] == SESSION and result["model_label"] == "offline (no LLM)"
    assert result["best"]["best_run"]["video_key"].endswith("videos/eval.mp4")
    # run's links name dev's ports, not the defaults, and open.
    printed = links(run.stderr)
    assert f"{stack.url('DASHBOARD')}/sessions/{SESSION}" in printed
    assert f"{stack.url('UI')}/namespaces/default/workflows/{SESSION}" in printed
    for url in printed:
        assert answers(url) == 200, url

    # The session is in the dashboard's list, with its prompt, and its page opens.
    listed = json.loads(urlopen(f"{stack.url('DASHBOARD')}/api/sessions", timeout=30).read())
    row = next(r for r in listed["sessions"] if r["session_id"] == SESSION)
    assert row["prompt"] == "run forward as fast as possible" and row["stage"] == "done"

    status = stack.cli("status", SESSION, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["best_score"] == result["best_score"]
    report = stack.cli("status", SESSION)
    assert report.returncode == 0, report.stderr
    printed = links(report.stdout)
    # The Web UI, the dashboard and the presigned video link.
    assert len(printed) == 3 and f"{stack.url('DASHBOARD')}/sessions/{SESSION}" in printed
    for url in printed:
        assert answers(url) == 200, url
    assert f"policyforge play {SESSION}" in report.stdout


def _rows(stack: Stack, *args: str) -> list[dict]:
    proc = stack.cli("sessions", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_sessions_lists_stages_scores_and_links(stack: Stack):
    waiting = stack.cli(
        "run",
        "run forward as fast as possible",
        "--env",
        "HalfCheetah-v5",
        "--approval",
        "first",
        "--detach",
        "--id",
        WAITING,
    )
    assert waiting.returncode == 0, waiting.stderr
    deadline = time.monotonic() + 120
    while True:  # the visibility store has the stage once the session upserts it
        rows = {r["session_id"]: r for r in _rows(stack)}
        if rows.get(WAITING, {}).get("stage") == "awaiting_approval":
            break
        assert time.monotonic() < deadline, rows
        time.sleep(1)
    done = rows[SESSION]
    assert done["stage"] == "done" and done["workflow_status"] == "Completed"
    assert done["iteration"] == 1 and done["passed"] == stack.result["passed"]
    assert done["best_score"] == pytest.approx(stack.result["best_score"], abs=1e-4)
    assert done["env_id"] == "HalfCheetah-v5"
    assert done["prompt"] == "run forward as fast as possible"
    assert done["dashboard_url"] == f"{stack.url('DASHBOARD')}/sessions/{SESSION}"
    assert done["ui_url"] == f"{stack.url('UI')}/namespaces/default/workflows/{SESSION}"
    assert rows[WAITING]["best_score"] is None
    assert list(rows) == [WAITING, SESSION]  # newest first

    assert [r["session_id"] for r in _rows(stack, "--stage", "awaiting_approval")] == [WAITING]
    assert _rows(stack, "--env", "Hopper-v5") == []
    assert [r["session_id"] for r in _rows(stack, "--limit", "1")] == [WAITING]

    table = stack.cli("sessions")
    assert table.returncode == 0, table.stderr
    for text in (SESSION, WAITING, "awaiting_approval", done["dashboard_url"], done["ui_url"]):
        assert text in table.stdout
    assert stack.cli("abort", WAITING, "done").returncode == 0


def test_play_replays_the_judged_episode(stack: Stack):
    out = stack.home / "cheetah.mp4"
    proc = stack.cli("play", SESSION, "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["session_id"] == SESSION and report["env_id"] == "HalfCheetah-v5"
    [episode] = report["episodes"]
    assert episode["length"] == EVAL_STEPS  # the session's --eval-steps, its run's seed
    judged = next(c for c in stack.result["best"]["criteria"] if c["metric"] == "mean_x_velocity")
    [row] = [c for c in episode["criteria"] if c["metric"] == "mean_x_velocity"]
    assert row["judged"] == judged["value"]
    speed = episode["measures"]["mean_x_velocity"]
    assert speed == pytest.approx(judged["value"], rel=0.05, abs=1e-6)
    with av.open(str(out)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == report["frames"] == EVAL_STEPS + 1
    assert frames[-1].std() > 0
    # For people: the judged value beside this episode's, and where the video is.
    text = stack.cli("play", SESSION, "--out", str(out))
    assert text.returncode == 0, text.stderr
    assert f"iteration 1, run {stack.result['best']['best_run']['run_name']}" in text.stdout
    assert f"(judged {judged['value']:.3f} m/s)" in text.stdout
    assert f"video: {out}" in text.stdout


def test_the_public_import_follows_and_plays_a_session(stack: Stack):
    script = f"""
import json
from policyforge import Session, sessions

session = Session({SESSION!r})
state = session.status()
policy = session.policy()
env = policy.make_env()
obs, _ = env.reset(seed=0)
steps, done = 0, False
while not done:
    obs, reward, terminated, truncated, _ = env.step(policy.predict(obs)[0])
    steps, done = steps + 1, terminated or truncated
print(json.dumps({{
    "stage": state.stage,
    "best": session.result().best_score,
    "steps": steps,
    "listed": [r["session_id"] for r in sessions()],
    "links": session.links(),
}}))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=newcomer(stack.home),
        cwd=stack.home,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["stage"] == "done" and out["best"] == stack.result["best_score"]
    assert out["steps"] == 1000 and SESSION in out["listed"]
    assert out["links"]["dashboard"] == f"{stack.url('DASHBOARD')}/sessions/{SESSION}"


def test_wait_reports_progress_and_the_snippet_prints_the_result(stack: Stack):
    """Issue 43: Session.wait is no silent wait; a callback sees the session's stages go by."""
    script = """
import json
from policyforge import Session

session = Session.start("run forward", "HalfCheetah-v5", total_timesteps=1024,
                        max_iterations=1, eval_max_steps=30, workflow_id="dev-run-wait")
seen = []
result = session.wait(progress=lambda status: seen.append(status.stage))
print(json.dumps({"stages": seen, "status": result.status}))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=newcomer(stack.home),
        cwd=stack.home,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "training" in out["stages"] and out["status"] in ("passed", "not_passed")
    assert len(out["stages"]) >= 2  # the statuses as they changed, not only the last


def test_ctrl_c_stops_everything(stack: Stack):
    stack.dev.send_signal(signal.SIGINT)
    assert stack.dev.wait(timeout=60) == 0
    for name in ("TEMPORAL", "S3", "DASHBOARD"):
        assert not port_in_use(stack.ports[name]), f"{name} still served after Ctrl-C"
    state = stack.home / ".policyforge"
    assert (state / "temporal.db").exists()
    # Its record goes with it: commands no longer read a dev that is not there.
    assert not (state / "dev.json").exists()
    assert list((state / "running").glob("dev-*.json")) == []
