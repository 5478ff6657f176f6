"""Run folders: named after the worker that owns them, removed when the run ends whatever the
code left there (never raising into the worker), and reaped at a worker's start when their
owner is gone (a killed worker, a power loss), never while it lives."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import pytest

from activities.runner import run_dirs, supervisor
from activities.runner.protocol import ChildRequest
from activities.training import job as training_job
from tests.processes import ended_process
from workers.pools.pools import clean_temporary_folders


def _with_hostile_content(folder: Path, outside: Path) -> Path:
    (folder / "pf-sandbox-x" / "deep" / "deeper").mkdir(parents=True)
    (folder / "pf-sandbox-x" / "link").symlink_to(outside)
    (folder / "pf-sandbox-x" / "deep" / "deeper").chmod(0)
    return folder


def test_a_run_folder_names_its_owner(tmp_path: Path) -> None:
    folder = Path(run_dirs.make_run_dir(str(tmp_path)))
    pid, start, _ = folder.name.removeprefix(run_dirs.PREFIX).split("-", 2)
    assert int(pid) == os.getpid() and int(start) == run_dirs._start_ticks(os.getpid())
    assert run_dirs.owner_alive(folder.name)


def test_stale_run_folders_are_reaped_and_live_ones_kept(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    dead_pid, dead_start = ended_process()
    stale = _with_hostile_content(tmp_path / f"pf-run-{dead_pid}-{dead_start}-abc123", outside)
    # A live pid whose start differs: the pid was reused after its owner died (or a reboot).
    reused = tmp_path / f"pf-run-{os.getpid()}-{(run_dirs._start_ticks(os.getpid()) or 0) + 1}-x"
    reused.mkdir()
    live = Path(run_dirs.make_run_dir(str(tmp_path)))
    (live / "pf-sandbox-y").mkdir()
    old_style = tmp_path / "pf-run-d9p30wlf"  # no owner in the name: not ours to judge
    old_style.mkdir()
    other = tmp_path / "pf-sandbox-abc"
    other.mkdir()

    removed = run_dirs.reap_stale(str(tmp_path)).removed

    assert sorted(removed) == sorted([str(stale), str(reused)])
    assert not os.path.lexists(stale) and not os.path.lexists(reused)
    assert (live / "pf-sandbox-y").is_dir()
    assert old_style.is_dir() and other.is_dir()
    assert (outside / "keep.txt").read_text() == "keep"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder of another uid")
def test_another_uids_run_folder_is_left_alone(tmp_path: Path) -> None:
    dead_pid, dead_start = ended_process()
    theirs = tmp_path / f"pf-run-{dead_pid}-{dead_start}-theirs"
    theirs.mkdir()
    os.chown(theirs, 0x7EFF0001, 0x7EFF0001)
    assert run_dirs.reap_stale(str(tmp_path)).removed == []
    assert theirs.is_dir()


def test_a_worker_start_reaps_what_a_killed_worker_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead_pid, dead_start = ended_process()
    stale = tmp_path / f"pf-run-{dead_pid}-{dead_start}-killed"
    (stale / "pf-sandbox-z").mkdir(parents=True)
    live = Path(run_dirs.make_run_dir())
    clean_temporary_folders()  # what every worker calls at its start
    assert not os.path.lexists(stale)
    assert live.is_dir()


def test_clean_up_never_raises_into_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(path: str) -> str | None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(supervisor, "remove_tree", broken)
    with caplog.at_level(logging.WARNING, logger=supervisor.__name__):
        supervisor.remove_run_dir(str(tmp_path))
    [record] = caplog.records
    assert "run folder not removed" in record.getMessage()
    assert "\n" not in record.getMessage()


async def test_a_run_removes_its_folder_even_with_a_hostile_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code builds a tree 3,000 levels deep in its scratch; the run's folder goes."""
    runs = tmp_path / "tmp"
    runs.mkdir()
    runs.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(runs))
    src = (
        "import os\n"
        "for _ in range(3000):\n"
        "    os.mkdir('d')\n"
        "    os.chdir('d')\n"
        "os.mkdir('sealed', 0)\n"
        "def reward_fn(obs, action, next_obs, info):\n"
        "    return 0.0, {'zero': 0.0}\n"
    )
    req = ChildRequest(env_id="HalfCheetah-v5", reward_source=src, steps=8, python_layers=False)
    result = await supervisor.run_child(training_job.VALIDATE, req, tmp_path / "out", timeout_s=120)
    assert result["ok"]
    assert [p.name for p in runs.iterdir()] == []
