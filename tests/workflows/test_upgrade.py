"""A deploy does not break a session in flight: a session started on release A waits at its
approval gate, A's workers stop, release B's workers (with a changed workflow) take it over, and
it finishes. B's change is behind `workflow.patched`, the discipline README's "Deploying a new
version" asks for; the same change without it cannot replay A's history."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker
from temporalio.workflow import NondeterminismError

# The release classes below run in the workflow sandbox, which imports this module again: the
# project's modules are passed through, so both releases share one copy of the contracts.
with workflow.unsafe.imports_passed_through():
    from tests.builders import start_session
    from tests.workflows.test_session import Script, session
    from tests.workflows.test_steering import until
    from workflows.contracts.queues import task_queue
    from workflows.contracts.steering import ApprovalDecision
    from workflows.session import SessionWorkflow
    from workflows.stages import Plan
    from workflows.steps import Steps

PATCH = "upgrade-test-settle-before-validation"


@workflow.defn(name="SessionWorkflow")
class ReleaseB(SessionWorkflow):
    """Release B: a new step (a short timer, a command A never made) before validation."""

    @workflow.run
    async def run(self, raw_input: dict, carry=None):  # noqa: ANN001
        return await super().run(raw_input, carry)

    async def _validate(self, steps: Steps, plan: Plan) -> None:
        if workflow.patched(PATCH):
            await workflow.sleep(timedelta(milliseconds=10))
        await super()._validate(steps, plan)


@workflow.defn(name="SessionWorkflow")
class ReleaseBUnpatched(SessionWorkflow):
    """The same change deployed without the patch."""

    @workflow.run
    async def run(self, raw_input: dict, carry=None):  # noqa: ANN001
        return await super().run(raw_input, carry)

    async def _validate(self, steps: Steps, plan: Plan) -> None:
        await workflow.sleep(timedelta(milliseconds=10))
        await super()._validate(steps, plan)


@contextlib.asynccontextmanager
async def release(
    client: Client, script: Script, prefix: str, workflow_class: type, name: str
) -> AsyncIterator[None]:
    """One release's three pools; the llm pool hosts the sessions with `workflow_class`."""
    acts = script.activities()
    async with (
        Worker(
            client,
            task_queue=task_queue("llm", prefix),
            workflows=[workflow_class],
            activities=acts["llm"],
            identity=f"llm-worker@{name}",
        ),
        Worker(client, task_queue=task_queue("train", prefix), activities=acts["train"]),
        Worker(client, task_queue=task_queue("judge", prefix), activities=acts["judge"]),
    ):
        yield


async def _history(handle: WorkflowHandle):
    return (await handle.fetch_history()).events


def _identities(events) -> set[str]:
    return {
        e.workflow_task_completed_event_attributes.identity
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    }


def _patched(events) -> bool:
    """Whether the session took B's patched branch (its marker is in the history)."""
    return any(
        e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED and PATCH in str(e) for e in events
    )


@pytest.mark.timeout(180)
async def test_a_session_started_on_one_release_finishes_on_the_next(temporal_env, queue_prefix):
    client = temporal_env.client
    script = Script(scores=[0.3, 0.9])
    inputs = {"prompt": "run forward", "env_id": "HalfCheetah-v5", "total_timesteps": 1000}
    async with release(client, script, queue_prefix, SessionWorkflow, "A"):
        handle = await start_session(
            client, queue_prefix, **inputs, max_iterations=2, approval="first"
        )
        await until(handle, lambda s: s.stage == "awaiting_approval")
    at_the_gate = await handle.fetch_history()  # A's workers are gone: stopped mid-session

    # Release B without the patch could not take the session over: its history differs.
    replayer = Replayer(workflows=[ReleaseBUnpatched], data_converter=pydantic_data_converter)
    with pytest.raises(NondeterminismError):
        await replayer.replay_workflow(at_the_gate)

    async with release(client, script, queue_prefix, ReleaseB, "B"):
        await handle.signal(SessionWorkflow.approve_signal, ApprovalDecision())
        result = await handle.result()
        # A session that starts on B takes the new step.
        fresh = await start_session(client, queue_prefix, **inputs, max_iterations=1)
        await fresh.result()

    assert result.status == "passed" and [r.score for r in result.iterations] == [0.3, 0.9]
    events = await _history(handle)
    assert _identities(events) == {"llm-worker@A", "llm-worker@B"}
    assert not _patched(events)  # B kept to A's commands for the session A started
    assert _patched(await _history(fresh))
    # B replays the upgraded session's whole history, and A's histories stay replayable.
    replayer = Replayer(workflows=[ReleaseB], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(await handle.fetch_history())


async def test_the_session_upgraded_mid_flight_keeps_its_records(temporal_env, queue_prefix):
    """The same upgrade through the ordinary stand-ins: the records A wrote are what B reads."""
    script = Script(scores=[0.9])
    async with session(temporal_env, queue_prefix, script, approval="first") as handle:
        waiting = await until(handle, lambda s: s.stage == "awaiting_approval")
    async with release(temporal_env.client, script, queue_prefix, ReleaseB, "B"):
        await handle.signal(SessionWorkflow.approve_signal, ApprovalDecision())
        result = await handle.result()
    assert result.passed and result.criteria == waiting.criteria
    assert [t.reward_key for t in script.calls["train_policy"]] == [
        r.key for r in waiting.pending_rewards
    ]
