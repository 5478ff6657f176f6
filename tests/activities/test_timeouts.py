"""Every inner limit ends strictly before its activity's timeout (workflows/contracts/timeouts.py),
so a failure surfaces as the error that names it, never as a bare activity timeout."""

from __future__ import annotations

import inspect
import re
from datetime import timedelta

import pytest
from temporalio.exceptions import ApplicationError

from activities.judging import activities as judging
from activities.llm.providers import registry
from activities.sandbox import client as sandbox
from activities.sandbox import judge_code, reward_client
from activities.training import evaluate_activity, train_activity, validate_activities
from activities.training.activities import TRAIN_ACTIVITIES
from workflows import step_base, step_code, step_runs, step_talks
from workflows.contracts import timeouts
from workflows.contracts.activities import ALL

# The activities that beat in their own code; every llm pool activity is beaten for by the
# pool's interceptor (workers/pools/heartbeats.py).
HEARTBEATING = {
    "validate_reward",
    "validate_judge",
    "train_policy",
    "train_batch",
    "evaluate_policy",
    "judge_rollout",
}
RUNS = (0, 1_000, 200_000, 5_000_000)  # timesteps of a training run


def _s(value: float) -> timedelta:
    return timedelta(seconds=value)


def test_every_activity_has_deadlines_and_an_inner_budget_inside_them():
    assert {ref.name for ref in ALL} == {*timeouts.FIXED, "train_policy", "train_batch"}
    for ref in ALL:
        for timesteps in RUNS:
            deadline = timeouts.for_activity(ref.name, timesteps)
            assert timedelta(0) < deadline.inner < deadline.start_to_close, ref.name


def test_the_activities_that_heartbeat_are_the_ones_the_table_gives_a_heartbeat_timeout():
    from activities.judging.activities import JUDGE_ACTIVITIES
    from activities.llm.activities import LLM_ACTIVITIES

    beating = set()
    from activities.training.batch_activity import train_batch

    for fn in (*TRAIN_ACTIVITIES, train_batch, *JUDGE_ACTIVITIES, *LLM_ACTIVITIES):
        source = inspect.getsource(fn)
        if "heartbeating(" in source or "activity.heartbeat(" in source:
            beating.add(fn.__temporal_activity_definition.name)  # type: ignore[attr-defined]
    assert beating == HEARTBEATING


def test_the_llm_pool_beats_for_its_calls():
    from workers.pools import pools

    assert "Heartbeats()" in inspect.getsource(pools.llm_worker)
    llm = {ref.name for ref in ALL if ref.pool == "llm"}
    assert llm and not llm & HEARTBEATING


def test_activities_that_heartbeat_have_a_heartbeat_timeout_well_above_their_beat():
    for ref in ALL:
        heartbeat = timeouts.for_activity(ref.name).heartbeat
        if ref.name not in HEARTBEATING and ref.pool != "llm":
            assert heartbeat is None, ref.name
            continue
        assert heartbeat is not None, f"{ref.name} heartbeats: it needs a heartbeat timeout"
        # Two beats may be lost (a busy event loop, a slow server) before the timeout fires.
        assert 2 * timeouts.HEARTBEAT_EVERY < heartbeat < timeouts.for_activity(ref.name).inner


def test_the_train_pools_children_end_inside_their_activities():
    assert _s(validate_activities.VALIDATE_TIMEOUT_S) <= timeouts.VALIDATE.inner
    assert _s(evaluate_activity.EVAL_TIMEOUT_S) <= timeouts.EVALUATE.inner
    for timesteps in RUNS:
        deadline = timeouts.train(timesteps)
        assert _s(train_activity.train_timeout_s(timesteps)) <= deadline.inner
        # A hung child is caught by the stall limit long before the run's own limit.
        assert _s(train_activity.TRAIN_STALL_S) < deadline.inner
    # A reward slow enough to stall training ends first, as the reward's fault (issue 42):
    # every read of a scoring call is shorter than the stall limit, with room for a progress
    # line after it.
    assert reward_client.SCORE_READ_MAX_S + 30 < train_activity.TRAIN_STALL_S
    # Each limit inside the validation child (starting the sandbox, loading the code, one
    # judge_fn call with the sandbox's 30 s on top) is shorter than the child's own.
    assert sandbox.START_TIMEOUT_S < validate_activities.VALIDATE_TIMEOUT_S
    assert sandbox.LOAD_TIMEOUT_S < validate_activities.VALIDATE_TIMEOUT_S
    assert judge_code.JUDGE_CALL_BUDGET_S + 30 < validate_activities.VALIDATE_TIMEOUT_S


def test_the_judge_child_ends_inside_judge_rollout():
    assert _s(judging.JUDGE_TIMEOUT_S) <= timeouts.JUDGE.inner
    # One judge_fn call (its budget, and the sandbox's 30 s on top) fits in the child's limit.
    assert judge_code.JUDGE_CALL_BUDGET_S + 30 < judging.JUDGE_TIMEOUT_S


def test_a_provider_request_ends_inside_its_llm_activity(monkeypatch):
    assert registry.DEFAULT_TIMEOUT_S <= registry.MAX_TIMEOUT_S
    assert _s(registry.MAX_TIMEOUT_S) <= timeouts.LLM.inner < timeouts.LLM.start_to_close
    monkeypatch.setenv(registry.TIMEOUT_VAR, str(registry.MAX_TIMEOUT_S))
    assert registry.timeout_s() == registry.MAX_TIMEOUT_S
    monkeypatch.setenv(registry.TIMEOUT_VAR, "600")
    with pytest.raises(ApplicationError, match="at most 330 s") as raised:
        registry.timeout_s()
    assert raised.value.non_retryable


def test_the_workflow_takes_its_timeouts_from_the_table_only():
    """The steps (workflows/step_*.py) schedule from the table (a session's history is checked
    against it in tests/workers/test_metrics.py); no timeout of their own."""
    sources = [inspect.getsource(m) for m in (step_base, step_code, step_runs, step_talks)]
    assert "timeouts.for_activity" in sources[0]
    for source in sources:
        assert not re.search(r"(timeout|heartbeat)\w*\s*=\s*timedelta", source)
