"""A training child runs on no more compute threads than there are free cores (issue 43)."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from activities.training import free_cores
from activities.training.free_cores import FreeCores


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(free_cores, "INTERVAL_S", 0.5)


def test_cores_another_process_keeps_busy_are_not_free(quick) -> None:
    cpus = len(os.sched_getaffinity(0))
    meter = FreeCores()
    others = [multiprocessing.Process(target=_burn, args=(1.5,)) for _ in range(cpus)]
    for p in others:
        p.start()
    time.sleep(1.0)
    threads = meter.threads(share=cpus)
    for p in others:
        p.join()
    # Every core burnt by another process: one thread is all the run takes.
    assert threads == 1


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
