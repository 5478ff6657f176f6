"""A training child runs on no more compute threads than there are free cores (issue 43)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from activities.training import free_cores
from activities.training.free_cores import FreeCores


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


BURN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass"


def _others_burn(n: int, seconds: float) -> None:
    """n processes that burn a core each for `seconds` and are not this process's: a shell
    starts them in the background and exits, so they are nobody's here."""
    burner = f"{sys.executable} -c '{BURN.format(s=seconds)}'"
    subprocess.run(["sh", "-c", " ".join([f"{burner} &"] * n)], check=True)


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(free_cores, "INTERVAL_S", 0.5)


def test_cores_another_process_keeps_busy_are_not_free(quick) -> None:
    cpus = len(os.sched_getaffinity(0))
    meter = FreeCores()
    _others_burn(cpus, 1.5)
    time.sleep(1.0)
    threads = meter.threads(share=cpus)
    time.sleep(0.6)  # the burners end
    # Every core burnt by another process: one thread is all the run takes.
    assert threads == 1


def test_the_runs_own_processes_are_its_own(quick) -> None:
    # The reward sandbox is a process the training child started: its CPU is the run's.
    before = free_cores._own_s()
    burner = subprocess.Popen([sys.executable, "-c", BURN.format(s=1.0)])
    burner.wait()
    reaped = free_cores._own_s()
    assert reaped - before >= 0.3  # reaped: counted with the children
    sandbox = subprocess.Popen([sys.executable, "-c", BURN.format(s=1.5)])
    try:
        time.sleep(1.0)
        running = free_cores._own_s()
        assert sandbox.pid in free_cores._descendants(os.getpid())
        assert running - reaped >= 0.3  # still running: counted too
    finally:
        sandbox.wait()


def test_an_idle_machine_leaves_the_whole_share(quick) -> None:
    meter = FreeCores()
    time.sleep(0.6)
    # This process's own work is never someone else's: it keeps its share.
    _burn(0.3)
    assert meter.threads(share=1) == 1
    assert meter.threads(share=len(os.sched_getaffinity(0))) >= 1


def test_updates_faster_than_the_interval_keep_the_last_measure(quick) -> None:
    meter = FreeCores()
    assert meter.threads(share=2) == 2  # nothing measured yet: the share
    assert meter.threads(share=2) == 2
