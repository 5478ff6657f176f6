"""judge_rollout heartbeats from start to end (the workflow gives it a heartbeat timeout): at
once, then every HEARTBEAT_EVERY while the judging works, and no more once it returned."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

import activities.judging.activities as judge_activities
from activities import heartbeats
from activities.judging.activities import judge_rollout
from tests.activities.judging.test_activities import TRAJ, _request, store  # noqa: F401
from tests.activities.judging.test_code_judge import synthetic
from workflows.contracts import timeouts
from workflows.contracts.judging import Judgment


def test_the_workflow_gives_judging_a_heartbeat_timeout_well_above_its_beat() -> None:
    deadline = timeouts.for_activity("judge_rollout")
    assert deadline.heartbeat == timeouts.HEARTBEAT
    assert 2 * timeouts.HEARTBEAT_EVERY < deadline.heartbeat < deadline.inner
    # A dead judge worker is noticed within a minute, not after the start-to-close.
    assert deadline.heartbeat <= timedelta(seconds=45) < deadline.start_to_close


async def test_judging_heartbeats_while_it_works_and_stops_when_done(
    store: dict[str, bytes],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store[TRAJ] = synthetic("HalfCheetah-v5", 100, vx=0.3)
    monkeypatch.setattr(heartbeats, "HEARTBEAT_EVERY", timedelta(milliseconds=20))
    real = judge_activities._judge_with_metrics

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)  # the judging's work, on its thread
        return real(*args, **kwargs)

    monkeypatch.setattr(judge_activities, "_judge_with_metrics", slow)
    beats: list[tuple[Any, ...]] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    judgment = await env.run(judge_rollout, _request())
    assert isinstance(judgment, Judgment)
    assert len(beats) >= 5, beats  # one at once, then one per beat while it judged
    done = len(beats)
    await asyncio.sleep(0.1)
    assert len(beats) == done
