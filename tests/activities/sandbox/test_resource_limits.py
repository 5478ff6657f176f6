"""The OS resource limits of the sandbox process, against code that tries to exhaust the host.

Hostile reward code (run with the Python layers on, where the static check refuses it, and
off, where only the OS limits and the runner's watchdog stand) tries to start 10,000 threads,
write 10 GB to its scratch, or burn a core in a background thread while each call answers in
time. Each must be ended within seconds with a code fault naming the limit, while the host
keeps its PIDs and its disk: a sampler records the machine's live tasks and free disk during
the attempt (the bounds leave room for the other processes of a shared machine, and are far
below what the attempts would take unchecked: 10,000 PIDs, 10 GB).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child
from activities.sandbox import layers
from activities.sandbox.client import SandboxClient
from activities.sandbox.limits import MAX_THREADS, SCRATCH_FILES, SCRATCH_MB, SCRATCH_TMPFS
from activities.sandbox.reward_client import SandboxRewards
from activities.sandbox.reward_code import RewardLoadError
from activities.training import job as training_job

STOPPED_WITHIN_S = 10.0
PID_BOUND = 1_000  # the machine's live tasks may grow by this much at most (of 10,000 tried)
DISK_BOUND_MB = 200  # root's free space may shrink by this much with a tmpfs scratch
FALLBACK_DISK_BOUND_MB = 1_000  # and with a plain folder measured by the watchdog (of 10 GB)

THREADS = """
import threading
threading.stack_size(65536)  # small stacks: the address-space limit alone would stop ~250
_hold = threading.Event()
_started = 0
for _ in range(10000):
    try:
        threading.Thread(target=_hold.wait, daemon=True).start()
        _started += 1
    except RuntimeError:
        pass  # refused: go on trying, as hostile code would
"""
FILL = """
_chunk = b"\\0" * (1 << 20)
_written = 0
for _k in range(640):  # 640 files of 16 MB: 10 GB, each under the per-file limit
    try:
        with open("fill-%d" % _k, "wb") as _f:
            for _ in range(16):
                _f.write(_chunk)
                _written += 1
    except OSError:
        pass  # refused: go on trying
"""
MANY_FILES = """
_made = 0
for _k in range(100000):
    try:
        open("f%d" % _k, "wb").close()
        _made += 1
    except OSError:
        pass
"""
BURN = """
import threading

def _burn():
    while True:
        pass

threading.Thread(target=_burn, daemon=True).start()
"""
REWARD = "\ndef reward_fn(obs, action, next_obs, info):\n    return 0.0, {'zero': 0.0}\n"


def _tasks() -> int:
    """The machine's live tasks (threads included): what its PIDs are spent on."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return count


def _free_disk_mb() -> float:
    st = os.statvfs("/")
    return st.f_bavail * st.f_frsize / 2**20


@dataclass
class Host:
    """The machine's live tasks and free disk, sampled every 50 ms while a test runs."""

    tasks0: int
    disk0: float
    max_tasks: int = 0
    min_disk: float = float("inf")
    stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        while not self.stop.is_set():
            self.max_tasks = max(self.max_tasks, _tasks())
            self.min_disk = min(self.min_disk, _free_disk_mb())
            self.stop.wait(0.05)

    def check(self, disk_bound_mb: float) -> None:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        grew = self.max_tasks - self.tasks0
        print(f"live tasks {self.tasks0} -> at most {self.max_tasks} (pid_max {pid_max})")
        print(f"free disk {self.disk0:.0f} MB -> at least {self.min_disk:.0f} MB")
        assert grew < PID_BOUND, f"the machine's live tasks grew by {grew}"
        assert self.disk0 - self.min_disk < disk_bound_mb, (
            f"free disk fell by {self.disk0 - self.min_disk:.0f} MB"
        )


@pytest.fixture
def host() -> Iterator[Host]:
    h = Host(_tasks(), _free_disk_mb())
    sampler = threading.Thread(target=h.sample, daemon=True)
    sampler.start()
    yield h
    h.stop.set()
    sampler.join()


def _score_until_stopped(src: str, python_layers: bool) -> tuple[str, float, SandboxClient]:
    """Load the reward in a sandbox and score with it until it fails: (fault, seconds)."""
    started = time.monotonic()
    box = SandboxClient()
    try:
        rewards = SandboxRewards(box, src + REWARD, "hostile.py", python_layers=python_layers)
        rid = rewards.new_instance()
        obs, action = np.zeros(17), np.zeros(6)
        while time.monotonic() - started < 60:
            rewards.score([(rid, obs, action, obs, {"x_velocity": 0.0})])
            time.sleep(0.002)
    except RewardLoadError as exc:
        return str(exc), time.monotonic() - started, box
    finally:
        box.close()
    raise AssertionError("the hostile reward was never stopped")


@pytest.mark.parametrize("python_layers", [True, False], ids=["python-layers", "os-only"])
@pytest.mark.parametrize(
    ("src", "limit"),
    [
        (THREADS, f"its {MAX_THREADS}-thread limit"),
        (FILL, f"its {SCRATCH_MB} MB scratch limit"),
        (MANY_FILES, f"its {SCRATCH_FILES}-file scratch limit"),
        (BURN, "its CPU limit"),
    ],
    ids=["threads", "fill", "files", "burn"],
)
def test_a_sandbox_over_a_limit_is_stopped_naming_it(
    src: str, limit: str, python_layers: bool, host: Host
) -> None:
    fault, seconds, box = _score_until_stopped(src, python_layers)
    print(f"{seconds:.1f} s: {fault}")
    assert "\n" not in fault
    if python_layers:
        # The static check refuses threads and files before anything runs.
        assert "exceeded" not in fault
    else:
        assert f"exceeded {limit}" in fault
        assert SCRATCH_TMPFS not in box.missing
    assert seconds < STOPPED_WITHIN_S
    host.check(DISK_BOUND_MB)


def test_scratch_without_a_tmpfs_is_measured_by_the_watchdog(
    monkeypatch: pytest.MonkeyPatch, host: Host
) -> None:
    monkeypatch.setenv(layers.TEST_DISABLE_VAR, SCRATCH_TMPFS)
    fault, seconds, box = _score_until_stopped(FILL, python_layers=False)
    print(f"{seconds:.1f} s: {fault}")
    assert SCRATCH_TMPFS in box.missing
    assert "rlimits" in box.applied  # the quota holds, measured instead of mounted
    assert f"exceeded its {SCRATCH_MB} MB scratch limit" in fault
    assert seconds < STOPPED_WITHIN_S
    assert not box.scratch.exists()
    host.check(FALLBACK_DISK_BOUND_MB)


def test_a_thread_below_the_limit_and_idle_is_no_fault() -> None:
    """The watchdog ends hostile code, not a reward that keeps a few idle threads."""
    src = (
        "import threading\n_hold = threading.Event()\n"
        "for _ in range(3):\n    threading.Thread(target=_hold.wait, daemon=True).start()\n"
    )
    with SandboxClient() as box:
        rewards = SandboxRewards(box, src + REWARD, "idle.py", python_layers=False)
        rid = rewards.new_instance()
        obs = np.zeros(17)
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            rewards.score([(rid, obs, np.zeros(6), obs, {"x_velocity": 0.0})])
            time.sleep(0.01)
        assert box.proc.poll() is None


def test_reading_large_batches_counts_as_the_calls_work_not_idle_cpu() -> None:
    """A cheap reward on Humanoid-sized rollouts (a 25 MB request per batch): the sandbox's
    reading of each request is part of its call. Counted outside the calls, it grew ten times
    faster than the allowance, and a 2M-step Humanoid run was ended for it after ~560k steps."""
    from activities.sandbox.limits import IDLE_CPU_SHARE
    from activities.sandbox.watchdog import read_stat

    n = 4096
    rng = np.random.default_rng(0)
    obs, action = rng.normal(size=(n, 348)), rng.normal(size=(n, 17))
    info = {"qpos": rng.normal(size=(n, 24)), "qvel": rng.normal(size=(n, 23))}
    with SandboxClient() as box:
        rewards = SandboxRewards(box, REWARD, "cheap.py")
        ids = [rewards.new_instance()] * n
        for _ in range(12):
            rewards.score_columns(ids, np.zeros(n, bool), obs, action, obs, info)
        watch = box._watch
        assert watch is not None
        now, busy = read_stat(watch.pid), watch.busy_s()
        outside = now.cpu_s - now.main_s + max(0.0, now.main_s - busy)
        assert outside <= IDLE_CPU_SHARE * busy, (outside, busy)
        assert watch.check() is None and box.proc.poll() is None


async def test_a_background_burn_ends_a_training_run(tmp_path: Path, host: Host) -> None:
    """The finding: each reward call answered in time while a thread burnt a core for the
    whole run. Now the run ends within seconds, blamed on the reward."""
    req = ChildRequest(
        env_id="HalfCheetah-v5",
        reward_source=BURN + REWARD,
        timesteps=500_000,
        progress_interval_s=0.5,
        python_layers=False,
    )
    started = time.monotonic()
    with pytest.raises(ChildFailed) as failed:
        await run_child(training_job.TRAIN, req, tmp_path, timeout_s=120)
    seconds = time.monotonic() - started
    print(f"{seconds:.1f} s: {failed.value.message}")
    assert failed.value.reward_fault
    assert "exceeded its CPU limit" in failed.value.message
    assert seconds < 30
    host.check(DISK_BOUND_MB)
