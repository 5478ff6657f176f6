"""Killed runs leave no temporary folders after the next worker's start: a worker keeps its
temporary folders in one folder named after it and locked while it lives
(activities/runner/run_dirs.py); a worker's start removes those of processes that are gone, and
only those (never a live worker's, another uid's, a link, or a name not ours), in one log line
with their count and size."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from activities.runner import run_dirs
from tests.processes import ended_process
from workers.pools.pools import clean_temporary_folders

# A worker as a killed one was: its folder made, a training's folder and a run's sandbox scratch
# (a deep, unreadable tree with a link out) inside, then it waits to be killed.
HOLDER = r"""
import os, sys, tempfile, time
from pathlib import Path
from activities.runner import run_dirs

with run_dirs.worker_temp_root(sys.argv[1]) as root:
    train = Path(tempfile.mkdtemp(prefix="pf-train-"))
    (train / "model.zip").write_bytes(os.urandom(300_000))
    scratch = Path(run_dirs.make_run_dir()) / "pf-sandbox-x"
    (scratch / "deep" / "deeper").mkdir(parents=True)
    (scratch / "link").symlink_to(sys.argv[2])
    (scratch / "deep" / "deeper").chmod(0)
    print(root, train, flush=True)
    time.sleep(600)
"""

# A process that holds the lock of a folder named after a dead owner (what a live worker in
# another pid namespace looks like from here).
LOCKER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)
"""


def _start(script: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep")
    return folder


def test_a_killed_workers_folders_go_at_the_next_start_and_live_ones_stay(
    tmp_path: Path, outside: Path
) -> None:
    base = tmp_path / "tmp"
    base.mkdir()
    killed, line = _start(HOLDER, str(base), str(outside))
    killed_root, killed_train = map(Path, line.split())
    live, line = _start(HOLDER, str(base), str(outside))
    live_root, live_train = map(Path, line.split())
    dead_pid, dead_start = ended_process()
    held = base / f"pf-worker-{dead_pid}-{dead_start}-held"
    held.mkdir()
    locker, said = _start(LOCKER, str(held))
    assert said == "locked"
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        # A run folder of a dead worker, straight in the root (before worker folders).
        dead_run = base / f"pf-run-{dead_pid}-{dead_start}-old"
        (dead_run / "pf-sandbox-y").mkdir(parents=True)
        # Never touched: a link named like a dead worker's folder, names not ours, and an
        # unowned folder of ours made since this boot (in use by an older worker, maybe).
        link = base / f"pf-worker-{dead_pid}-{dead_start}-link"
        link.symlink_to(outside)
        others = [base / "pf-other-1", base / "SB3-2026", base / "pf-train-recent"]
        for folder in others:
            folder.mkdir()
        assert killed_root.is_dir() and killed_train.is_relative_to(killed_root)

        with capture_logs() as logs:
            clean_temporary_folders(str(base))

        assert not os.path.lexists(killed_root) and not os.path.lexists(dead_run)
        assert live_train.is_dir() and live_train.is_relative_to(live_root)
        assert held.is_dir() and link.is_symlink() and all(f.is_dir() for f in others)
        assert (outside / "keep.txt").read_text() == "keep"
        [line_] = logs
        assert line_["event"] == "removed the temporary folders of workers that are gone"
        assert line_["folders"] == 2 and line_["bytes"] >= 300_000
        assert line_["left"] == [f"{held} left behind: its lock is held by a live process"]
    finally:
        for proc in (killed, live, locker):
            proc.kill()
            proc.wait()


def test_unowned_folders_of_ours_go_only_when_made_before_this_boot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "pf-train-d9p30wlf"  # pf-train-<random>: the layout before worker folders
    (old / "out").mkdir(parents=True)
    (old / "out" / "model.zip").write_bytes(b"x" * 10_000)
    other = tmp_path / "pf-bench-d9p30wlf"  # ours, but not a worker's: left to its command
    other.mkdir()
    assert run_dirs.reap_stale(str(tmp_path)).removed == []
    monkeypatch.setattr(run_dirs, "_boot_time", lambda: time.time() + 60)  # booted since
    reaped = run_dirs.reap_stale(str(tmp_path))
    assert reaped.removed == [str(old)] and reaped.bytes >= 10_000
    assert other.is_dir()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder of another uid")
def test_another_uids_worker_folder_is_left_alone(tmp_path: Path) -> None:
    dead_pid, dead_start = ended_process()
    theirs = tmp_path / f"pf-worker-{dead_pid}-{dead_start}-theirs"
    theirs.mkdir()
    os.chown(theirs, 0x7EFF0001, 0x7EFF0001)
    assert run_dirs.reap_stale(str(tmp_path)).removed == []
    assert theirs.is_dir()


def test_a_workers_temporary_folders_are_in_its_own_removed_when_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with run_dirs.worker_temp_root() as root:
        assert Path(root).parent == tmp_path
        assert Path(root).name.startswith(f"pf-worker-{os.getpid()}-")
        # Every temporary folder of the process and its children lands there.
        assert tempfile.gettempdir() == os.environ["TMPDIR"] == root
        with tempfile.TemporaryDirectory(prefix="pf-judge-") as judging:
            assert Path(judging).parent == Path(root)
        assert Path(run_dirs.make_run_dir()).parent == Path(root)
        # Several pools in one process share it; the reaper looks where it was made.
        with run_dirs.worker_temp_root() as again:
            assert again == root
        assert Path(root).is_dir()
        assert run_dirs.reap_stale().removed == []
    assert not os.path.lexists(root)
    assert tempfile.gettempdir() == os.environ["TMPDIR"] == str(tmp_path)
