"""One activity scheduled as a session schedules it (the deadlines table, its pool's retries),
for the tests that kill a pool's worker mid-activity and check how soon the retry finished."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.client import WorkflowHandle

from workflows.contracts import timeouts
from workflows.step_base import LLM_RETRY, SHORT_RETRY


@workflow.defn(sandboxed=False)
class OneActivity:
    """Runs the activity `name` on `queue` and returns its result as the converter gave it."""

    @workflow.run
    async def run(self, name: str, arg: Any, queue: str, llm: bool) -> Any:
        deadline = timeouts.for_activity(name)
        return await workflow.execute_activity(
            name,
            arg,
            task_queue=queue,
            start_to_close_timeout=deadline.start_to_close,
            heartbeat_timeout=deadline.heartbeat,
            retry_policy=LLM_RETRY if llm else SHORT_RETRY,
        )


async def retried_after_heartbeat_timeout(handle: WorkflowHandle[Any, Any]) -> float:
    """When (epoch seconds) the activity completed, having checked that its second attempt
    completed it after the first attempt's heartbeat timed out."""
    started = completed = None
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            completed = event
    assert started is not None and completed is not None
    attrs = started.activity_task_started_event_attributes
    assert attrs.attempt == 2
    timeout_info = attrs.last_failure.timeout_failure_info
    assert timeout_info.timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT
    return completed.event_time.ToDatetime().timestamp()
