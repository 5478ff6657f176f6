"""Runner children forked from the worker's template process: what they get, and that they
end with it and with the worker."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from activities.runner import launch
from activities.runner.supervisor import REPO_ROOT, child_env

PROBE = "tests.activities.runner.probe_child"
SLOW_PROBE = "tests.activities.runner.slow_probe"


@pytest.fixture(autouse=True)
def _template_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the template: on, whatever the environment running them says."""
    monkeypatch.delenv("POLICYFORGE_CHILD_TEMPLATE", raising=False)


async def _probe(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[dict, int]:
    child = await launch.launch(PROBE, list(args), str(cwd), env or child_env())
    assert child.stdout is not None and child.stderr is not None
    info = json.loads(await child.stdout.readline())
    assert (await child.stderr.read()).decode().strip() == "to stderr"
    return info, await child.wait()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _gone(pid: int, wait_s: float = 10.0) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


async def test_a_forked_child_gets_the_runs_session_folder_environment_and_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "worker-only-secret")
    env = {**child_env(), "POLICYFORGE_RUN_TMP": str(tmp_path), "POLICYFORGE_SANDBOX_X": "1"}
    info, status = await _probe(tmp_path, "7", env=env)
    assert status == 7
    # Forked from the template, not exec'd by this process.
    assert info["ppid"] != os.getpid()
    assert "activities.runner.template" in _cmdline(info["ppid"])
    assert info["sid"] == info["pgid"] == info["pid"]  # its own session: killed as a group
    assert info["cwd"] == str(tmp_path)
    assert info["argv"] == ["7"]
    assert info["comm"] == "pf-7"
    assert info["env"]["POLICYFORGE_RUN_TMP"] == str(tmp_path)
    assert info["env"]["POLICYFORGE_SANDBOX_X"] == "1"
    assert info["env"]["POLICYFORGE_PARENT_PID"] == str(info["ppid"])
    assert "AWS_SECRET_ACCESS_KEY" not in info["env"]
    # The template itself never saw the worker's secrets, nor a run's own settings.
    template_env = Path(f"/proc/{info['ppid']}/environ").read_bytes()
    assert b"worker-only-secret" not in template_env
    assert b"POLICYFORGE_SANDBOX_X" not in template_env


async def test_a_run_with_another_environment_starts_fresh(tmp_path: Path):
    await _probe(tmp_path, "0")  # the template exists, with child_env()
    env = {**child_env(), "MUJOCO_GL": "osmesa"}  # read when modules load: not forkable
    info, status = await _probe(tmp_path, "3", env=env)
    assert status == 3
    assert info["ppid"] == os.getpid()
    assert info["env"]["MUJOCO_GL"] == "osmesa"


async def test_the_template_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("POLICYFORGE_CHILD_TEMPLATE", "0")
    info, status = await _probe(tmp_path, "0")
    assert status == 0 and info["ppid"] == os.getpid()


async def test_children_end_with_their_template_and_a_new_one_serves_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(launch, "_current", None)  # a template of this test's own
    monkeypatch.setattr(launch, "RESTART_AFTER_S", 0.0)
    child = await launch.launch(PROBE, ["0", "60"], str(tmp_path), child_env())
    assert child.stdout is not None
    info = json.loads(await child.stdout.readline())
    assert "activities.runner.template" in _cmdline(info["ppid"])  # never kill this process
    os.kill(info["ppid"], signal.SIGKILL)
    assert await child.wait() == -signal.SIGKILL
    assert _gone(info["pid"]), "the child outlived its template"
    again, status = await _probe(tmp_path, "0")
    assert status == 0
    assert again["ppid"] not in (os.getpid(), info["ppid"])
    assert "activities.runner.template" in _cmdline(again["ppid"])


def _working_in(folder: Path) -> list[int]:
    """Live processes whose working folder is `folder`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(proc / "cwd")) == folder and not _gone(int(proc.name), 0):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


async def test_a_launch_cancelled_before_its_fork_leaves_no_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(launch, "_current", None)  # a template that has not imported SLOW_PROBE
    await _probe(tmp_path, "0")
    folder = tmp_path / "cancelled"
    folder.mkdir()
    task = asyncio.create_task(launch.launch(SLOW_PROBE, ["60"], str(folder), child_env()))
    await asyncio.sleep(0.5)  # the template is importing SLOW_PROBE: no pid yet
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(3)  # the import ended and the child was forked, then killed
    assert not _working_in(folder)


WORKER = f"""
import asyncio, json, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
from activities.runner import launch
from activities.runner.supervisor import child_env

async def main():
    child = await launch.launch({PROBE!r}, ["0", "120"], "/", child_env())
    print((await child.stdout.readline()).decode().strip(), flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


def test_a_killed_worker_takes_its_template_and_children_with_it():
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER], stdout=subprocess.PIPE, cwd=REPO_ROOT, text=True
    )
    try:
        assert worker.stdout is not None
        info = json.loads(worker.stdout.readline())
        assert info["ppid"] != worker.pid  # forked from the worker's template
        worker.kill()
        worker.wait()
        assert _gone(info["ppid"]), "the template outlived its worker"
        assert _gone(info["pid"]), "a child outlived its worker"
    finally:
        worker.kill()
        worker.wait()
