"""A session that fails says why in one line, in `policyforge run` and `policyforge status`
(`--json`: as "error"), against the real dev server with stand-in activities."""

from __future__ import annotations

import asyncio
import json

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from tests.workflows.test_session import Script, stand_in_workers
from workers.cli.sessions import failure_reason, show_status, start_and_follow

WHY = "ANTHROPIC_API_KEY is not set on the LLM worker"
# The line names the agent and the stage before the provider's words.
LINE = f"eliciting: the elicitor failed: {WHY}"
INPUT = {
    "prompt": "run forward",
    "env_id": "HalfCheetah-v5",
    "total_timesteps": 1000,
    "llm_model": "claude-x",
}


@pytest.fixture
def cli_env(temporal_env, queue_prefix, monkeypatch) -> str:
    """The CLI's settings: the test server, this test's queues."""
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_env.client.service_client.config.target_host)
    monkeypatch.setenv("POLICYFORGE_QUEUE_PREFIX", queue_prefix)
    monkeypatch.delenv("TEMPORAL_PROFILE", raising=False)
    return queue_prefix


async def test_run_and_status_say_why_the_session_failed(temporal_env, cli_env, capsys):
    script = Script(scores=[1.0], elicit_error=WHY)
    async with stand_in_workers(temporal_env.client, script, cli_env):
        with pytest.raises(SystemExit) as ended:
            await start_and_follow(INPUT, workflow_id=None, detach=False, as_json=True)
        out = capsys.readouterr().out
        # The command fails with the one line (stderr); --json also prints it as "error".
        line = str(ended.value.code)
        assert f"failed: {LINE}" in line.splitlines()[0]
        failure = json.loads(out)
        assert failure["status"] == "failed" and failure["error"] == LINE
        wid = failure["session_id"]
        assert line.startswith(f"error: session {wid} failed: ")

        await show_status(wid, as_json=False)
        text = capsys.readouterr().out
        assert f"session {wid}: failed" in text
        assert f"  failed: {LINE}" in text
        await show_status(wid, as_json=True)
        status = json.loads(capsys.readouterr().out)
    assert status["error"] == LINE and status["workflow_status"] == "failed"
    assert status["stage"] == "failed"  # the workflow's own status, still queryable


async def test_status_of_a_terminated_session_says_so_with_the_reason(
    temporal_env, cli_env, capsys
):
    script = Script(scores=[1.0], hang_from_iteration=1)
    async with stand_in_workers(temporal_env.client, script, cli_env):
        wid = await start_and_follow(INPUT, workflow_id=None, detach=True, as_json=False)
        assert wid is None  # detached
        started = capsys.readouterr().out
        wid = started.split()[1]
        handle = temporal_env.client.get_workflow_handle(wid)
        for _ in range(100):  # until training has started (and hangs)
            if "train_policy" in script.calls:
                break
            await asyncio.sleep(0.1)
        await handle.terminate(reason="operator stopped it")
        await show_status(wid, as_json=True)
    status = json.loads(capsys.readouterr().out)
    assert status["workflow_status"] == "terminated"
    assert status["error"] == "terminated (operator stopped it)"


def _activity_failed(activity_type: str, cause: BaseException) -> WorkflowFailureError:
    failed = ActivityError(
        "Activity task failed",
        scheduled_event_id=5,
        started_event_id=6,
        identity="w",
        activity_type=activity_type,
        activity_id="1",
        retry_state=None,
    )
    failed.__cause__ = cause
    outer = ApplicationError("iteration 1 failed")
    outer.__cause__ = failed
    return WorkflowFailureError(cause=outer)


def test_the_line_is_the_innermost_cause_and_names_an_activity_that_timed_out():
    refused = ApplicationError("required sandbox layer missing:\n  seccomp", non_retryable=True)
    assert failure_reason(_activity_failed("train_policy", refused)) == (
        "required sandbox layer missing: seccomp"
    )
    timed_out = TemporalTimeoutError(
        "activity Heartbeat timeout", type=TimeoutType.HEARTBEAT, last_heartbeat_details=[]
    )
    assert failure_reason(_activity_failed("train_policy", timed_out)) == (
        "train_policy: activity Heartbeat timeout"
    )
