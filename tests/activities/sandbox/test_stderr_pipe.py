"""The sandbox's stderr is a pipe drained by its client, never a file on the real disk.

Reward code runs with the Python layers off (plain exec, real builtins, as a bug in the static
check would leave it): it looks at every fd it holds, floods its stderr, and dies after a
marker. No writable fd is a real-disk file, the flood neither blocks the sandbox nor grows the
client's buffer past its tail, and the last line still reaches the one-line error.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from activities.sandbox import layers
from activities.sandbox.client import STDERR_TAIL_BYTES, SandboxClient
from activities.sandbox.reward_client import SandboxRewards
from activities.sandbox.reward_code import RewardLoadError

FLOOD_BYTES = 10 << 20
MARKER = "pf-stderr-marker-7f3a"

# Every fd the code holds open for writing: (regular files outside the scratch tmpfs, fd 2's
# type) as its terms, or an error naming the file.
FD_SCAN = """
import os
import stat

def _fds():
    try:
        return [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:  # Landlock hides /proc: every number instead
        return range(4096)

def reward_fn(obs, action, next_obs, info):
    scratch = os.stat(os.environ["TMPDIR"]).st_dev
    writable, disk = 0, []
    for fd in _fds():
        try:
            st = os.fstat(fd)
            os.write(fd, b"")  # zero bytes: EBADF unless the fd is open for writing
        except OSError:
            continue
        writable += 1
        if stat.S_ISREG(st.st_mode) and st.st_dev != scratch:
            disk.append("fd %d (%d bytes, inode %d)" % (fd, st.st_size, st.st_ino))
    if disk:
        raise RuntimeError("writable real-disk files: " + ", ".join(disk))
    fifo = stat.S_ISFIFO(os.fstat(2).st_mode)
    return 0.0, {"writable": float(writable), "stderr_fifo": float(fifo)}
"""

FLOOD = f"""
import os

_done = []

def reward_fn(obs, action, next_obs, info):
    if not _done:
        block = b"x" * 65535 + b"\\n"
        sent = 0
        while sent < {FLOOD_BYTES}:
            sent += os.write(2, block)
        os.write(2, b"{MARKER}\\n")
        _done.append(sent)
    return 0.0, {{"zero": 0.0}}
"""

CRASH = f"""
import os

def reward_fn(obs, action, next_obs, info):
    os.write(2, b"earlier line\\n{MARKER}: about to die\\n\\n")
    os._exit(3)
"""


def _score_once(box: SandboxClient, src: str) -> dict[str, float]:
    rewards = SandboxRewards(box, src, "stderr.py", python_layers=False)
    rid = rewards.new_instance()
    obs = np.zeros(17)
    [(_, terms)] = rewards.score([(rid, obs, np.zeros(6), obs, {"x_velocity": 0.0})])
    return terms


def _tail_ending(box: SandboxClient, end: bytes, wait_s: float = 5.0) -> bytes:
    """The client's stderr tail once it ends with `end` (the drain may lag the call)."""
    deadline = time.monotonic() + wait_s
    while True:
        tail = box._stderr.tail()
        if tail.endswith(end) or time.monotonic() > deadline:
            return tail
        time.sleep(0.02)


def test_no_writable_fd_of_the_code_is_a_file_on_the_real_disk() -> None:
    with SandboxClient() as box:
        terms = _score_once(box, FD_SCAN)
    assert terms["stderr_fifo"] == 1.0, terms
    assert terms["writable"] >= 2, terms  # fds 1 and 2 at least: the scan saw them


def test_a_flood_of_stderr_neither_blocks_the_call_nor_grows_the_clients_buffer() -> None:
    with SandboxClient() as box:
        started = time.monotonic()
        _score_once(box, FLOOD)
        seconds = time.monotonic() - started
        tail = _tail_ending(box, f"{MARKER}\n".encode())
        assert tail.endswith(f"{MARKER}\n".encode()), tail[-200:]
        assert len(tail) <= STDERR_TAIL_BYTES
        assert box._stderr.dropped >= FLOOD_BYTES - STDERR_TAIL_BYTES
        assert box.proc.poll() is None
    assert seconds < 20, seconds


def test_the_last_line_before_a_crash_reaches_the_one_line_error() -> None:
    with SandboxClient() as box, pytest.raises(RewardLoadError) as info:
        _score_once(box, CRASH)
    message = str(info.value)
    assert "exited with status 3" in message, message
    assert f"{MARKER}: about to die" in message, message
    assert "\n" not in message


def test_a_startup_failure_shows_the_hosts_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host writes a JSON `host_error` line to stderr when it fails before serving."""
    fake = tmp_path / "python"
    fake.write_text(f'#!/bin/sh\necho \'{{"host_error": "RuntimeError: {MARKER}"}}\' >&2\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    with pytest.raises(layers.SandboxUnavailable) as info:
        SandboxClient()
    message = str(info.value)
    assert "did not start" in message and f"RuntimeError: {MARKER}" in message, message


@pytest.mark.parametrize("tmpfs", [True, False], ids=["tmpfs", "plain-scratch"])
def test_no_stderr_file_is_left_in_scratch(tmpfs: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from activities.sandbox.limits import SCRATCH_TMPFS

    if not tmpfs:
        monkeypatch.setenv(layers.TEST_DISABLE_VAR, SCRATCH_TMPFS)
    with SandboxClient() as box:
        _score_once(box, "def reward_fn(o, a, n, i):\n    return 0.0, {'zero': 0.0}\n")
        assert (SCRATCH_TMPFS in box.missing) is not tmpfs
        assert not os.path.lexists(box.scratch / "stderr.txt")
        assert os.listdir(box.scratch) == []


def test_close_ends_the_drain_and_closes_its_end() -> None:
    box = SandboxClient()
    drain = box._stderr._thread
    pipe = os.fstat(box._stderr._fd)
    assert stat.S_ISFIFO(pipe.st_mode) and drain.is_alive()
    box.close()
    assert not drain.is_alive() and drain not in threading.enumerate()
    try:
        now = os.fstat(box._stderr._fd)
    except OSError:
        return  # closed
    assert (now.st_dev, now.st_ino) != (pipe.st_dev, pipe.st_ino), "the read end is still open"
