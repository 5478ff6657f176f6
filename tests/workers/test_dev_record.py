"""`policyforge dev`'s record of where it listens: read by the commands beside it for what their
settings leave out; explicit settings win, and a record of a process that is gone is ignored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.workers.fake_dev import environ, record_of
from workers.dev.dev_record import (
    RECORD,
    apply_record,
    read_record,
    remove_record,
    running_dir,
    write_record,
)
from workers.dev.services import free_port


def test_a_command_without_settings_takes_everything_from_the_record(home: Path, dev_pid: int):
    paths = write_record(record_of(dev_pid), home / ".policyforge")
    assert paths == [home / ".policyforge" / RECORD, running_dir() / f"dev-{dev_pid}.json"]
    env = environ(home)
    assert apply_record(env) == record_of(dev_pid)
    assert env["TEMPORAL_ADDRESS"] == "127.0.0.1:17433"
    assert env["TEMPORAL_NAMESPACE"] == "default"
    assert env["POLICYFORGE_UI_URL"] == "http://localhost:18433"
    assert env["POLICYFORGE_DASHBOARD_URL"] == "http://localhost:18634"
    assert env["AWS_ENDPOINT_URL_S3"] == "http://127.0.0.1:18333"
    assert env["POLICYFORGE_BUCKET"] == "policyforge"
    assert env["AWS_ACCESS_KEY_ID"] == env["AWS_SECRET_ACCESS_KEY"] == "policyforge"
    assert env["POLICYFORGE_QUEUE_PREFIX"] == "policyforge"
    # `policyforge ui` serves a dashboard of its own: the record's is not its address.
    ui_env = environ(home)
    apply_record(ui_env, dashboard=False)
    assert "POLICYFORGE_DASHBOARD_URL" not in ui_env


def test_explicit_settings_win(home: Path, dev_pid: int):
    write_record(record_of(dev_pid), home / ".policyforge")
    env = environ(home, POLICYFORGE_UI_URL="http://ui.example", AWS_ACCESS_KEY_ID="mine")
    apply_record(env)
    assert env["POLICYFORGE_UI_URL"] == "http://ui.example"
    assert env["AWS_ACCESS_KEY_ID"] == "mine" and "AWS_SECRET_ACCESS_KEY" not in env
    assert env["POLICYFORGE_DASHBOARD_URL"] == "http://localhost:18634"

    # Another Temporal server configured: nothing of this dev's record applies.
    elsewhere = environ(home, TEMPORAL_ADDRESS="temporal.example:7233")
    assert apply_record(elsewhere) is None
    assert set(elsewhere) == set(environ(home, TEMPORAL_ADDRESS="x"))

    # A Temporal profile that names a server is as explicit as TEMPORAL_ADDRESS.
    profile = home / "profile.toml"
    profile.write_text('[profile.default]\naddress = "temporal.example:7233"\n')
    with_profile = {**environ(home), "TEMPORAL_CONFIG_FILE": str(profile)}
    assert apply_record(with_profile) is None
    assert "TEMPORAL_ADDRESS" not in with_profile

    # Another S3 configured: its bucket and keys stay the person's.
    own_s3 = environ(home, AWS_ENDPOINT_URL_S3="https://s3.example")
    apply_record(own_s3)
    assert own_s3["AWS_ENDPOINT_URL_S3"] == "https://s3.example"
    assert "POLICYFORGE_BUCKET" not in own_s3 and "AWS_ACCESS_KEY_ID" not in own_s3


def test_only_temporal_address_given_finds_a_dev_with_its_own_state_folder(
    home: Path, dev_pid: int
):
    # The set-up: dev with its own state folder; the other terminal set only
    # TEMPORAL_ADDRESS (localhost there, 127.0.0.1 in the record: the same server).
    write_record(record_of(dev_pid), home / "elsewhere")
    env = environ(home, TEMPORAL_ADDRESS="localhost:17433")
    assert apply_record(env) is not None
    assert env["TEMPORAL_ADDRESS"] == "localhost:17433"
    assert env["POLICYFORGE_UI_URL"] == "http://localhost:18433"
    assert env["POLICYFORGE_DASHBOARD_URL"] == "http://localhost:18634"
    # Without the address, the other state folder's record is not guessed at.
    assert apply_record(environ(home)) is None
    # POLICYFORGE_STATE_DIR points at it.
    pointed = environ(home, POLICYFORGE_STATE_DIR=str(home / "elsewhere"))
    assert apply_record(pointed) is not None
    assert pointed["TEMPORAL_ADDRESS"] == "127.0.0.1:17433"


def test_a_record_of_a_process_that_is_gone_is_ignored(home: Path, dev_pid: int):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_record(record_of(dev_pid, pid=gone.pid, pid_start=None), home / ".policyforge")
    assert read_record(home / ".policyforge" / RECORD) is None
    assert apply_record(environ(home)) is None
    # A live pid that another process took since: its start time differs.
    write_record(record_of(dev_pid, pid_start="1"), home / ".policyforge")
    assert apply_record(environ(home)) is None
    # The running list keeps no record of a process that is gone.
    assert not (running_dir() / f"dev-{gone.pid}.json").exists()


def test_dev_removes_only_its_own_record(home: Path, dev_pid: int):
    paths = write_record(record_of(dev_pid), home / ".policyforge")
    remove_record(paths, pid=dev_pid + 1)
    assert all(p.exists() for p in paths)
    remove_record(paths, pid=dev_pid)
    assert not any(p.exists() for p in paths)


def test_the_cli_connects_where_the_record_says(home: Path, dev_pid: int):
    # Nothing listens at the recorded address: the error names it, so the record was read.
    port = free_port()
    write_record(record_of(dev_pid, temporal_address=f"127.0.0.1:{port}"), home / ".policyforge")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "AWS_", "POLICYFORGE_"))
    }
    proc = subprocess.run(
        [sys.executable, "-m", "workers.cli", "status", "some-session"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, **environ(home)},
    )
    assert proc.returncode == 1
    assert f"no Temporal server answers at 127.0.0.1:{port}" in proc.stderr
