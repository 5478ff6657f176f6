"""Every log line of a worker process is one structlog JSON object: ours, the Temporal SDK's
(workflow lines included, once, not again on replay), boto3's, httpx's, Python warnings; lines
written while an activity runs carry its session and iteration."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import uuid
import warnings
from collections.abc import Iterator

import pytest
from temporalio import activity, workflow
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

# The workflow below runs in the sandbox, which imports this module again.
with workflow.unsafe.imports_passed_through():
    import structlog

    from activities.logs import activity_logger
    from workers.logs import CHATTY, configure_logging
    from workers.pools.metrics import _core_logs


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    """configure_logging (as a worker process calls it) onto a string, undone afterwards."""
    root = logging.getLogger()
    names = ("temporalio", *CHATTY)
    saved = (
        root.handlers[:],
        root.level,
        {name: logging.getLogger(name).level for name in names},
        workflow.logger.workflow_info_on_message,
        activity.logger.activity_info_on_message,
    )
    stream = io.StringIO()
    configure_logging("info", stream)
    try:
        yield stream
    finally:
        handlers, level, levels, on_workflow, on_activity = saved
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, value in levels.items():
            logging.getLogger(name).setLevel(value)
        workflow.logger.workflow_info_on_message = on_workflow
        activity.logger.activity_info_on_message = on_activity
        logging.captureWarnings(False)
        structlog.contextvars.clear_contextvars()
        structlog.reset_defaults()


def records(stream: io.StringIO) -> list[dict]:
    """Every line is a JSON object with a level, a timestamp and an event."""
    out = []
    for line in stream.getvalue().splitlines():
        record = json.loads(line)  # fails on a line that is not JSON
        assert {"event", "level", "timestamp"} <= set(record), record
        out.append(record)
    return out


def by_event(stream: io.StringIO) -> dict[str, dict]:
    return {r["event"]: r for r in records(stream)}


def test_library_lines_come_out_as_json(log_stream):
    logging.getLogger("botocore.credentials").info("Found credentials in environment variables.")
    logging.getLogger("botocore.retryhandler").warning("retry %d of %d", 1, 5)
    logging.getLogger("urllib3.connectionpool").warning("Connection pool is full")
    logging.getLogger("temporalio.worker._worker").info("Beginning worker shutdown")
    logging.getLogger("temporalio.workflow").info(
        "session started",
        extra={
            "temporal_workflow": {"workflow_id": "pf-x-1", "workflow_type": "SessionWorkflow"},
            "session_id": "pf-x-1",
            "iteration": 2,
        },
    )
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a deprecated thing", UserWarning, stacklevel=1)
    try:
        raise ValueError("bad value")
    except ValueError:
        logging.getLogger("anthropic").exception("request failed")
    lines = by_event(log_stream)

    # botocore's chatter at info stays out; its warnings come through.
    assert "Found credentials in environment variables." not in lines
    assert lines["retry 1 of 5"]["logger"] == "botocore.retryhandler"
    assert lines["retry 1 of 5"]["level"] == "warning"
    assert lines["Connection pool is full"]["logger"] == "urllib3.connectionpool"
    # The SDK's lines at info are kept (workflow lines were dropped before).
    assert lines["Beginning worker shutdown"]["level"] == "info"
    started = lines["session started"]
    assert started["session_id"] == "pf-x-1" and started["iteration"] == 2
    assert started["workflow_type"] == "SessionWorkflow"
    assert started["logger"] == "temporalio.workflow"
    (warned,) = [r for r in lines.values() if r.get("logger") == "py.warnings"]
    assert "a deprecated thing" in warned["event"]
    failed = lines["request failed"]
    assert failed["level"] == "error"
    assert failed["exception"][0]["exc_type"] == "ValueError"
    assert "locals" not in failed["exception"][0]["frames"][-1]  # a frame's locals may hold keys


def test_lines_written_in_an_activity_carry_its_session_and_iteration(log_stream):
    def an_activity() -> None:
        activity_logger(3, env_id="Hopper-v5").info("reward authored")
        # What the activity's libraries log while it runs: boto3, httpx, the LLM call's line.
        logging.getLogger("botocore.endpoint").warning("slow response from S3")
        logging.getLogger("httpx").warning("HTTP Request: POST https://x 529")
        structlog.get_logger().info("llm call", agent="reward_author")
        activity.logger.warning("heartbeat failed")

    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id="pf-hop-1", activity_type="author_reward")
    env.run(an_activity)
    lines = by_event(log_stream)
    for event in (
        "reward authored",
        "slow response from S3",
        "HTTP Request: POST https://x 529",
        "llm call",
        "heartbeat failed",
    ):
        line = lines[event]
        assert line["session_id"] == "pf-hop-1", line
        assert line["iteration"] == 3, line
        assert line["activity"] == "author_reward", line
    assert lines["reward authored"]["env_id"] == "Hopper-v5"
    assert lines["heartbeat failed"]["event"] == "heartbeat failed"  # no details appended


@workflow.defn(name="LogsOnceWorkflow")
class LogsOnce:
    @workflow.run
    async def run(self) -> str:
        workflow.logger.info("before the timer", extra={"iteration": 1})
        await workflow.sleep(0.2)
        workflow.logger.info("after the timer", extra={"iteration": 1})
        return "done"


async def test_a_workflow_line_comes_out_once_not_again_on_replay(log_stream, temporal_env):
    """With no workflow cache, the worker replays the history from the start on every task:
    the line before the timer is written once all the same."""
    queue = f"pftest-logs-{uuid.uuid4().hex[:8]}"
    wid = f"{queue}-wf"
    async with Worker(
        temporal_env.client, task_queue=queue, workflows=[LogsOnce], max_cached_workflows=0
    ):
        assert (
            await temporal_env.client.execute_workflow(LogsOnce.run, id=wid, task_queue=queue)
            == "done"
        )
    lines = [r for r in records(log_stream) if r.get("session_id") == wid]
    assert [r["event"] for r in lines] == ["before the timer", "after the timer"]
    for line in lines:
        assert line["logger"] == "temporalio.workflow" and line["level"] == "info"
        assert line["workflow_type"] == "LogsOnceWorkflow" and line["iteration"] == 1


@dataclasses.dataclass
class CoreEntry:
    """What the SDK core hands its log forwarding (temporalio.bridge.runtime.BufferedLogEntry)."""

    target: str
    message: str
    time: float
    level: int
    fields: dict


def test_the_sdk_cores_lines_come_out_as_json_with_their_fields(log_stream):
    """The worker runtime forwards the core's lines to the `temporalio.core` logger."""
    forwarding = _core_logs().forwarding
    assert forwarding is not None
    entry = CoreEntry(
        target="temporalio_sdk_core::worker::activities",
        message="Activity not found on completion",
        time=1.0,
        level=logging.WARNING,
        fields={"task_token": "TaskToken(abc)"},
    )
    forwarding._on_logs([entry])  # type: ignore[list-item]
    line = by_event(log_stream)["Activity not found on completion"]
    assert line["logger"] == "temporalio.core" and line["level"] == "warning"
    assert line["target"] == entry.target and line["fields"] == entry.fields
