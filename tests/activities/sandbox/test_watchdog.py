"""The watchdog's CPU and scratch accounting, against code that hides from the old measures.

With the Python layers off (plain exec, standing in for a hole in the static check):
  - a reward that sleeps in each call (under its budget) and burns its main thread's CPU
    between calls, in a signal handler, hid under the calls' wall time: the watch now counts
    the main thread's CPU time inside calls, sampled as each starts and ends;
  - files in a plain-folder scratch, mapped, closed and unlinked, hid from the walk and from
    /proc/pid/fd: the watch now counts the deleted files the process maps.
And neither ends a benign reward: one that sleeps in its calls, one that runs long.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from activities.sandbox import layers, scrub, watchdog
from activities.sandbox.client import SandboxClient
from activities.sandbox.limits import SCRATCH_MB, SCRATCH_TMPFS
from activities.sandbox.reward_client import SandboxRewards
from activities.sandbox.reward_code import RewardLoadError
from tests.activities.sandbox.hostile_os import BANKED_CPU, CASES, source

MAPPED_SCRATCH = next(c for c in CASES if c.id == "mapped_scratch")
REWARD = "\ndef reward_fn(obs, action, next_obs, info):\n    return 0.0, {'zero': 0.0}\n"
MB = 1 << 20


def _ctx(folder: Path) -> dict[str, Any]:
    """What hostile_os's prelude reads of its test's context (no canaries here)."""
    return {
        "tag": "watchdog",
        "sh_path": str(folder / "sh.txt"),
        "escape_paths": [],
        "out_files": [],
        "out": str(folder),
    }


def _score_once(rewards: SandboxRewards, rid: int) -> None:
    obs = np.zeros(17)
    rewards.score([(rid, obs, np.zeros(6), obs, {"x_velocity": 0.0})])


def _score_until_stopped(
    box: SandboxClient, src: str, pause_s: float, limit_s: float = 30.0
) -> tuple[str, float]:
    """Score with the reward, pausing between calls as a trainer does, until it fails:
    (fault, seconds)."""
    started = time.monotonic()
    try:
        rewards = SandboxRewards(box, src, "hostile.py", python_layers=False)
        rid = rewards.new_instance()
        while time.monotonic() - started < limit_s:
            _score_once(rewards, rid)
            time.sleep(pause_s)
    except RewardLoadError as exc:
        return str(exc), time.monotonic() - started
    raise AssertionError("the hostile reward was never stopped")


def _outside_s(watch: watchdog.Watch) -> tuple[float, float]:
    """(CPU seconds outside calls, inside them), as the watchdog counts them now."""
    now = watchdog.read_stat(watch.pid)
    inside = watch._inside_s(now.main_s)
    return now.cpu_s - inside, inside


# ---- CPU: counted as CPU time, per thread, not as the calls' wall time ----


def test_cpu_banked_by_sleeping_in_calls_and_burnt_between_them_is_stopped(
    tmp_path: Path,
) -> None:
    """The finding: 0.8 s asleep in each call banked 0.8 s of wall time, and a SIGUSR1 handler
    then burnt 0.7 s of the main thread's CPU while it waited for the next request, unseen."""
    src = source(BANKED_CPU, _ctx(tmp_path))
    with SandboxClient() as box:
        fault, seconds = _score_until_stopped(box, src, pause_s=0.8)
    print(f"{seconds:.1f} s: {fault}")
    assert "exceeded its CPU limit" in fault
    assert "\n" not in fault
    assert seconds < 15


def _sleeper(seconds: float) -> str:
    return (
        "import time\n\ndef reward_fn(obs, action, next_obs, info):\n"
        f"    time.sleep({seconds})\n    return 0.0, {{'zero': 0.0}}\n"
    )


def test_a_reward_that_sleeps_in_its_calls_is_no_fault() -> None:
    """Sleeping uses no CPU: nothing counts outside, and nothing is banked either."""
    with SandboxClient() as box:
        rewards = SandboxRewards(box, _sleeper(0.3), "sleepy.py", python_layers=False)
        rid = rewards.new_instance()
        for _ in range(8):
            _score_once(rewards, rid)
            time.sleep(0.2)
        watch = box._watch
        assert watch is not None
        outside, inside = _outside_s(watch)
        print(f"outside {outside:.2f} s, inside {inside:.2f} s")
        assert outside < 0.2
        assert inside < 2.0  # 2.4 s asleep in calls: their CPU time, not their wall time
        assert watch.check() is None and box.proc.poll() is None


@pytest.mark.slow
def test_a_long_run_of_a_benign_reward_is_no_fault() -> None:
    """25,000 calls of a reward that does some numpy work, back to back and with pauses: what
    its main thread does between calls (back to the next read) stays far below the share."""
    src = (
        "import numpy as np\n\ndef reward_fn(obs, action, next_obs, info):\n"
        "    v = float(info['x_velocity'])\n"
        "    ctrl = 0.1 * float(np.square(action).sum())\n"
        "    return v - ctrl, {'forward': v, 'ctrl': -ctrl}\n"
    )
    with SandboxClient() as box:
        rewards = SandboxRewards(box, src, "benign.py", python_layers=False)
        ids = [rewards.new_instance() for _ in range(4)]
        rng = np.random.default_rng(0)
        obs, action = rng.normal(size=17), rng.normal(size=6)
        batch = [(rid, obs, action, obs, {"x_velocity": 1.0}) for rid in ids]
        for k in range(25_000):
            rewards.score(batch)
            if k % 500 == 0:
                time.sleep(0.05)  # the trainer's update
        watch = box._watch
        assert watch is not None
        outside, inside = _outside_s(watch)
        print(f"outside {outside:.2f} s, inside {inside:.2f} s")
        assert outside < 0.2 + 0.02 * inside
        assert watch.check() is None and box.proc.poll() is None


class _Helper:
    """A plain Python process (no sandbox) that burns CPU on its main thread on request."""

    CODE = (
        "import sys, time\n"
        "for line in sys.stdin:\n"
        "    end = time.thread_time() + float(line)\n"
        "    while time.thread_time() < end:\n"
        "        pass\n"
        "    print('done', flush=True)\n"
    )

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self.CODE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def burn(self, seconds: float) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{seconds}\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline() == "done\n"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


@pytest.fixture
def helper(tmp_path: Path) -> Iterator[tuple[_Helper, watchdog.Watch]]:
    h = _Helper()
    watch = watchdog.Watch(h.proc.pid, tmp_path, 0)
    try:
        h.burn(0)
        watch.call_ended()  # its start-up counts as a call, as a sandbox's does
        yield h, watch
    finally:
        watch.stop()
        h.close()


def test_cpu_inside_calls_is_the_main_threads_cpu_between_their_samples(
    helper: tuple[_Helper, watchdog.Watch], monkeypatch: pytest.MonkeyPatch
) -> None:
    h, watch = helper
    outside0, inside0 = _outside_s(watch)
    watch.call_started()
    h.burn(0.3)
    time.sleep(0.3)  # a call's wall time: no CPU, so nothing banked
    watch.call_ended()
    outside, inside = _outside_s(watch)
    assert 0.25 <= inside - inside0 < 0.35
    assert outside - outside0 < 0.05
    h.burn(0.3)  # between calls
    outside, _ = _outside_s(watch)
    assert 0.25 <= outside - outside0 < 0.4
    assert watch.check() is None  # within IDLE_CPU_S
    monkeypatch.setattr(watchdog, "IDLE_CPU_S", 0.1)
    reason = watch.check()
    assert reason is not None and reason.startswith("CPU limit"), reason


def test_a_call_in_progress_counts_up_to_the_sample(
    helper: tuple[_Helper, watchdog.Watch],
) -> None:
    h, watch = helper
    watch.call_started()
    h.burn(0.3)
    outside, inside = _outside_s(watch)  # the call is not over: its CPU so far is inside
    assert inside >= 0.25 and outside < 0.1
    assert watch.busy_s() >= inside - 0.02
    watch.call_ended()


def test_a_process_gone_is_counted_no_more(helper: tuple[_Helper, watchdog.Watch]) -> None:
    h, watch = helper
    watch.call_started()
    h.close()  # killed and reaped: its stat file now reads ESRCH
    watch.call_ended()
    watch.call_started()
    watch.call_ended()
    assert watch.check() is None
    assert watch._main.ticks() is None


def test_the_per_call_samples_are_cheap(helper: tuple[_Helper, watchdog.Watch]) -> None:
    """Two samples a call (pread of the main thread's stat file, kept open)."""
    _, watch = helper
    n = 5_000
    started = time.perf_counter()
    for _ in range(n):
        watch.call_started()
        watch.call_ended()
    per_call_us = (time.perf_counter() - started) / n * 1e6
    print(f"{per_call_us:.1f} us per call")
    assert per_call_us < 200  # some 8 us here; loose for a loaded machine


# ---- scratch: deleted files it maps count, each once ----


# mmap through libc: Python's mmap objects keep a copy of the fd, which the fd scan would see.
MAP_PAGE = r"""
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)


def map_page(fd, offset=0, length=4096):
    addr = _libc.mmap(None, length, 3, 1, fd, offset)  # PROT_READ | PROT_WRITE, MAP_SHARED
    if addr is None or addr == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "mmap refused")
    return addr
"""
_MAPPER = (
    MAP_PAGE
    + r"""
import sys
folder, size_mb = sys.argv[1], int(sys.argv[2])


def made(name, mb):
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(b"\1" * (mb << 20))
    return path


# deleted, one page mapped twice (one file), its fd closed
path = made("deleted", size_mb)
fd = os.open(path, os.O_RDWR)
map_page(fd)
map_page(fd, offset=4096)
os.close(fd)
os.unlink(path)
# deleted, mapped and still open: counted once
path = made("held", 1)
held = os.open(path, os.O_RDWR)
map_page(held, length=1 << 20)
os.unlink(path)
# still named: the walk counts it
path = made("named", 1)
fd = os.open(path, os.O_RDWR)
map_page(fd, length=1 << 20)
os.close(fd)
print("ready", flush=True)
sys.stdin.read()
"""
)


@pytest.fixture
def mapper(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", _MAPPER, str(scratch), "8"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # pytest's capture file is a deleted file: not the helper's
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield proc.pid, scratch
    finally:
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def test_deleted_mapped_files_count_at_their_blocks_each_once(
    mapper: tuple[int, Path],
) -> None:
    pid, scratch = mapper
    mapped = watchdog.deleted_mapped(pid, scratch)
    held = watchdog.deleted_open(pid)
    assert len(held) == 1
    assert set(held) < set(mapped)
    sizes = sorted(mapped.values())
    assert len(sizes) == 2  # "named" is the walk's
    assert sizes[0] >= MB and sizes[1] >= 8 * MB  # 8 MB on disk, one page of it mapped
    assert watchdog.deleted_mapped(pid, scratch / "elsewhere") == {}


def test_the_watch_adds_hidden_files_to_the_walk(mapper: tuple[int, Path]) -> None:
    pid, scratch = mapper
    watch = watchdog.Watch(pid, scratch, 0)
    try:
        used, files = watch._scratch_use()
    finally:
        watch.stop()
    walked, _ = scrub.usage(scratch, 100)
    assert walked < 2 * MB  # "named" alone
    assert used >= walked + 9 * MB
    assert files == 3


def _hide_one(mb: int) -> str:
    """A reward whose module hides a file of `mb` MB: mapped, closed and unlinked."""
    return (
        MAP_PAGE
        + "with open('hidden', 'wb') as _f:\n"
        + f"    _f.write(b'\\1' * ({mb} << 20))\n"
        + "_fd = os.open('hidden', os.O_RDWR)\n"
        + "map_page(_fd)\n"
        + "os.close(_fd)\n"
        + "os.unlink('hidden')\n"
        + REWARD
    )


@pytest.mark.parametrize("tmpfs", [True, False], ids=["tmpfs", "plain-folder"])
def test_a_mapped_deleted_file_in_scratch_is_measured(
    tmpfs: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tmpfs keeps a mapped deleted file's blocks (statvfs counts them); a plain folder's
    walk misses it, the maps do not. Below the limit, it is no fault."""
    if not tmpfs:
        monkeypatch.setenv(layers.TEST_DISABLE_VAR, SCRATCH_TMPFS)
    with SandboxClient() as box:
        assert (SCRATCH_TMPFS in box.missing) is not tmpfs
        rewards = SandboxRewards(box, _hide_one(24), "hide.py", python_layers=False)
        _score_once(rewards, rewards.new_instance())
        watch = box._watch
        assert watch is not None
        used, _ = watch._scratch_use()
        print(f"scratch in use: {used / MB:.1f} MB")
        assert used >= 24 * MB
        if not tmpfs:
            assert scrub.usage(box.scratch, 100)[0] < MB
        time.sleep(2 * watchdog.PERIOD_S)
        assert watch.check() is None and box.proc.poll() is None


@pytest.mark.parametrize("tmpfs", [True, False], ids=["tmpfs", "plain-folder"])
def test_files_hidden_in_mappings_end_the_sandbox(
    tmpfs: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding: 40 MB files mapped, closed and unlinked, 120 MB in all, unseen where
    scratch was a plain folder."""
    if not tmpfs:
        monkeypatch.setenv(layers.TEST_DISABLE_VAR, SCRATCH_TMPFS)
    src = source(MAPPED_SCRATCH, _ctx(tmp_path))
    with SandboxClient() as box:
        fault, seconds = _score_until_stopped(box, src, pause_s=0.01)
        assert (SCRATCH_TMPFS in box.missing) is not tmpfs
    print(f"{seconds:.1f} s: {fault}")
    assert f"exceeded its {SCRATCH_MB} MB scratch limit" in fault
    assert seconds < 10
