"""Issue 42: a planted `dev.json` is not trusted. The record steers where every command connects
and what it prints, so it is read only when it is ours (owner, modes), names the live
`policyforge dev` that wrote it (pid, start time, command line), and holds only local addresses
and plain text; anything else is ignored with one line naming the check, and the commands fall
back to their defaults. `policyforge dev`'s state folder and record are private."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.workers.fake_dev import environ, record_of
from workers.dev.dev_record import (
    RECORD,
    DevRecord,
    apply_record,
    is_dev_command,
    is_local_address,
    is_local_url,
    private_folder,
    process_start,
    read_record,
    running_dir,
    write_record,
)
from workers.dev.main import private_umask
from workers.dev.services import free_port


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_state_folder_and_the_record_are_private(home: Path, dev_pid: int):
    # A state folder from an older release: world-readable, its database too.
    state = home / "state"
    state.mkdir(mode=0o755)
    (state / "temporal.db").write_text("")
    (state / "temporal.db").chmod(0o644)
    private_folder(state)
    assert _mode(state) == 0o700 and _mode(state / "temporal.db") == 0o600

    paths = write_record(record_of(dev_pid), state)
    assert [_mode(p) for p in paths] == [0o600, 0o600]
    assert _mode(running_dir()) == 0o700 and _mode(home / ".policyforge") == 0o700
    # No temporary file is left beside the record.
    assert sorted(p.name for p in state.iterdir()) == [RECORD, "temporal.db"]

    # What the embedded services create while they start is this user's alone (they inherit
    # the mask): a file made by a child process started inside.
    with private_umask():
        subprocess.run(["touch", str(state / "temporal.log")], check=True)
    assert _mode(state / "temporal.log") == 0o600


def test_a_new_state_folder_and_its_parents_are_private(home: Path):
    folder = private_folder(home / "a" / "b")
    assert _mode(home / "a") == 0o700 and _mode(folder) == 0o700


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a folder to another user")
def test_dev_refuses_a_state_folder_of_another_user(home: Path):
    theirs = home / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(PermissionError, match="owned by uid 65534"):
        private_folder(theirs)


def test_dev_s_own_record_is_read(home: Path, dev_pid: int, capsys):
    write_record(record_of(dev_pid), home / ".policyforge")
    assert read_record(home / ".policyforge" / RECORD) == record_of(dev_pid)
    assert capsys.readouterr().err == ""


def _dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


# Each planted record: how it is made from the live stand-in's pid, and the reason printed.
PLANTED: dict[str, tuple[Callable[[int], DevRecord], str]] = {
    "pid 1": (lambda dev: record_of(1), "its process 1 is not `policyforge dev`"),
    "dead pid": (
        lambda dev: record_of(_dead_pid(), pid_start="1"),
        "is not running",
    ),
    "recycled pid": (
        lambda dev: record_of(dev, pid_start=str(int(process_start(dev) or 0) + 1)),
        "is not the one recorded (start time differs)",
    ),
    "this test's pid": (
        lambda dev: record_of(os.getpid(), pid_start="1"),
        f"its process {os.getpid()} is not the one recorded (start time differs)",
    ),
    "another command line": (
        lambda dev: record_of(dev, command=("policyforge", "dev", "--no-dashboard")),
        "is not the one recorded (command differs)",
    ),
    "non-local Temporal": (
        lambda dev: record_of(dev, temporal_address="temporal.example:7233"),
        "its temporal_address is not local (127.0.0.1, ::1, localhost)",
    ),
    "non-local S3": (
        lambda dev: record_of(dev, s3_endpoint="http://s3.example:8333"),
        "its s3_endpoint is not a local http(s) URL",
    ),
    "non-local UI behind a user part": (
        lambda dev: record_of(dev, ui_url="http://127.0.0.1@ui.example/"),
        "its ui_url is not a local http(s) URL",
    ),
    "non-local dashboard": (
        lambda dev: record_of(dev, dashboard_url="http://dashboard.example:8234"),
        "its dashboard_url is not a local http(s) URL",
    ),
    "escape sequence": (
        lambda dev: record_of(dev, namespace="\x1b]8;;http://x.example\x07default\x1b]8;;\x07"),
        "its namespace holds control or non-ASCII characters",
    ),
    "invisible character": (
        lambda dev: record_of(dev, queue_prefix="policyforge\u2800"),
        "its queue_prefix holds control or non-ASCII characters",
    ),
}


@pytest.mark.parametrize("case", list(PLANTED))
def test_a_planted_record_is_ignored_with_its_reason(home: Path, dev_pid: int, capsys, case):
    make, reason = PLANTED[case]
    state = home / ".policyforge"
    write_record(make(dev_pid), state)
    capsys.readouterr()
    _assert_ignored(home, state / RECORD, reason, capsys)


def _assert_ignored(home: Path, path: Path, reason: str, capsys) -> None:
    """`path` is not read, with one line saying why, and a command keeps its defaults."""
    assert read_record(path) is None
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"policyforge: ignoring {path}: ") and reason in line, line
    env = environ(home)
    assert apply_record(env) is None
    assert env == environ(home)
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.fixture
def written(home: Path, dev_pid: int) -> Path:
    """dev's own record, as dev writes it (changed on disk by each test)."""
    return write_record(record_of(dev_pid), home / ".policyforge")[0]


def test_a_group_writable_record_is_ignored(home: Path, written: Path, capsys):
    written.chmod(0o620)
    _assert_ignored(home, written, "it is writable by group or others (mode 620)", capsys)


def test_a_record_in_a_folder_others_can_write_is_ignored(home: Path, written: Path, capsys):
    written.parent.chmod(0o1777)
    _assert_ignored(home, written, "its folder is writable by group or others (mode 1777)", capsys)


def test_a_record_that_is_a_link_is_ignored(home: Path, written: Path, capsys):
    real = written.with_name("real.json")
    written.rename(real)
    written.symlink_to(real)
    _assert_ignored(home, written, "it is not a regular file (a link?)", capsys)


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file to another user")
def test_a_record_of_another_user_is_ignored(home: Path, written: Path, capsys):
    os.chown(written, 65534, 65534)
    _assert_ignored(home, written, "it is owned by uid 65534, not by this user", capsys)


def test_a_live_process_that_is_not_dev_is_not_dev(home: Path, capsys):
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        write_record(record_of(sleeper.pid), home / ".policyforge")
        capsys.readouterr()
        reason = f"its process {sleeper.pid} is not `policyforge dev`"
        _assert_ignored(home, home / ".policyforge" / RECORD, reason, capsys)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_record_that_is_not_a_record_is_ignored(home: Path, written: Path, capsys):
    written.write_text("{}")
    _assert_ignored(home, written, "it has no pid", capsys)
    written.write_text('{"pid": "1"}')
    _assert_ignored(home, written, "its pid is not of the expected type", capsys)
    written.write_text(written.read_text().replace("{", "{{"))
    _assert_ignored(home, written, "it is not JSON", capsys)


@pytest.mark.parametrize("command", [["status", "some-session"], ["sessions"]])
def test_the_cli_falls_back_to_its_defaults(home: Path, dev_pid: int, command: list[str]):
    # Planted: a Temporal server elsewhere, and an escape sequence to print. The CLI connects
    # to its default (nothing listens on the port given: the error names it) and prints neither.
    planted = record_of(dev_pid, temporal_address="203.0.113.9:7233", namespace="\x1b[2Jdefault")
    write_record(planted, home / ".policyforge")
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "AWS_", "POLICYFORGE_"))
    }
    proc = subprocess.run(
        [sys.executable, "-m", "workers.cli", *command],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, **environ(home), "POLICYFORGE_TEMPORAL_PORT": str(port)},
    )
    assert proc.returncode == 1
    record = home / ".policyforge" / RECORD
    assert f"policyforge: ignoring {record}: its namespace holds control" in proc.stderr
    assert f"localhost:{port}" in proc.stderr, proc.stderr
    assert "203.0.113.9" not in proc.stdout + proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr


def test_only_dev_s_files_are_tightened(home: Path):
    # POLICYFORGE_STATE_DIR may name a folder of the person's: their files keep their modes.
    state = home / "state"
    state.mkdir()
    for name in ("temporal.db", "temporal.db-wal", "seaweedfs.log", "notes.txt"):
        (state / name).write_text("")
        (state / name).chmod(0o644)
    private_folder(state)
    modes = {p.name: _mode(p) for p in state.iterdir()}
    assert modes == {
        "temporal.db": 0o600,
        "temporal.db-wal": 0o600,
        "seaweedfs.log": 0o600,
        "notes.txt": 0o644,
    }


@pytest.mark.parametrize(
    ("argv", "dev"),
    [
        (["/venv/bin/policyforge", "dev"], True),
        (["/venv/bin/python", "/venv/bin/policyforge", "dev", "--no-dashboard"], True),
        (["python3", "-X", "dev", "-m", "workers.cli", "dev"], True),
        (["/venv/bin/policyforge", "status", "dev"], False),
        (["python3", "-m", "workers.cli", "run", "dev"], False),
        (["python3", "-c", "pass", "policyforge", "dev"], False),
        (["python3", "-m", "other", "dev"], False),
        (["sleep", "300"], False),
        ([], False),
    ],
)
def test_what_counts_as_policyforge_dev(argv: list[str], dev: bool):
    assert is_dev_command(argv) is dev


@pytest.mark.parametrize(
    ("address", "local"),
    [
        ("127.0.0.1:7233", True),
        ("localhost:7233", True),
        ("[::1]:7233", True),
        ("LOCALHOST:7233", True),
        ("127.0.0.2:7233", False),
        ("localhost.example:7233", False),
        ("temporal.example:7233", False),
        ("127.0.0.1", False),
        ("127.0.0.1:x", False),
    ],
)
def test_local_addresses(address: str, local: bool):
    assert is_local_address(address) is local


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:8233", True),
        ("https://127.0.0.1:8333/path", True),
        ("http://[::1]:8234", True),
        ("http://127.0.0.1@evil.example:8234", False),
        ("http://user:pw@localhost:8234", False),
        ("http://localhost:notaport", False),
        ("ftp://localhost:21", False),
        ("javascript://localhost/%0aalert(1)", False),
        ("//localhost:8233", False),
        ("http://evil.example/?localhost", False),
    ],
)
def test_local_urls(url: str, local: bool):
    assert is_local_url(url) is local
