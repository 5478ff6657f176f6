"""A worker process's Prometheus endpoint: the SDK's `temporal_*` metrics and ours (sessions by
outcome, LLM calls, tokens and cost, training steps and speed), scraped after a session on the
real dev server. The session's history also shows every activity scheduled with the deadlines
of workflows/contracts/timeouts.py."""

from __future__ import annotations

import re
import urllib.request
import uuid

from temporalio.api.enums.v1 import EventType
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Worker

from activities import metrics as ours
from activities.artifacts import ArtifactStore
from activities.training.train_activity import train_policy
from tests.activities.training.rewards import RUN_FORWARD
from tests.builders import start_session
from tests.workflows.test_session import Script
from workers.client import connect
from workers.dev.services import free_port
from workers.pools.metrics import LLMUsageMetrics, serves_metrics, worker_runtime
from workers.settings import Settings
from workflows.contracts import timeouts
from workflows.contracts.queues import task_queue
from workflows.contracts.training import TrainRequest
from workflows.session import SessionWorkflow


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.read().decode()


def samples(text: str, name: str) -> dict[str, float]:
    """`name`'s samples: {'{labels}': value}."""
    out = {}
    for line in text.splitlines():
        match = re.match(rf"^{re.escape(name)}(\{{.*\}})? (\S+)$", line)
        if match:
            out[match.group(1) or ""] = float(match.group(2))
    return out


async def test_a_worker_serves_the_sdks_metrics_and_ours(
    temporal_env, s3, queue_prefix, monkeypatch
):
    port = free_port()
    runtime = worker_runtime(port, host="127.0.0.1")
    assert serves_metrics(runtime)
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_env.client.service_client.config.target_host)
    client = await connect(Settings(), runtime=runtime)

    # A session with an LLM (stand-in activities, as the workflow tests use), on workers whose
    # client has the runtime; the llm pool counts its calls as workers/pools/pools.py does.
    script = Script(scores=[1.0])
    acts = script.activities()
    async with (
        Worker(
            client,
            task_queue=task_queue("llm", queue_prefix),
            workflows=[SessionWorkflow],
            activities=acts["llm"],
            interceptors=[LLMUsageMetrics()],
        ),
        Worker(client, task_queue=task_queue("train", queue_prefix), activities=acts["train"]),
        Worker(client, task_queue=task_queue("judge", queue_prefix), activities=acts["judge"]),
    ):
        handle = await start_session(
            client,
            queue_prefix,
            prompt="run forward",
            env_id="HalfCheetah-v5",
            total_timesteps=1000,
            llm_model="claude-x",
        )
        result = await handle.result()
    assert result.passed
    llm_calls = result.llm_usage.calls

    # The real training activity, recording through the same runtime's meter.
    store = ArtifactStore()
    store.ensure_bucket()
    sid = f"t-{uuid.uuid4().hex[:8]}"
    key = store.put_text(f"sessions/{sid}/iter_1/reward_fn.py", RUN_FORWARD)
    env = ActivityEnvironment()
    env.metric_meter = runtime.metric_meter
    trained = await env.run(
        train_policy,
        TrainRequest(
            session_id=sid,
            iteration=1,
            run_name="c0_default_seed_0",
            env_id="HalfCheetah-v5",
            reward_key=key,
            timesteps=1024,
            eval_max_steps=20,
        ),
    )

    text = scrape(port)
    # The SDK's own, from the workers that ran the session.
    assert samples(text, "temporal_workflow_completed"), text[:2000]
    assert samples(text, "temporal_activity_execution_latency_count")
    # Sessions by outcome (the workflow's counter).
    sessions = samples(text, ours.SESSIONS)
    assert any('outcome="passed"' in labels and v >= 1 for labels, v in sessions.items()), sessions
    # Every LLM call the session made, with its tokens (100 in, 50 out each) and cost.
    calls = samples(text, ours.LLM_CALLS)
    assert sum(calls.values()) == llm_calls > 0
    assert any('agent="elicitor"' in labels and 'model="claude-x"' in labels for labels in calls)
    tokens = samples(text, ours.LLM_TOKENS)
    by_direction = {
        d: sum(v for labels, v in tokens.items() if f'direction="{d}"' in labels)
        for d in ("input", "output")
    }
    assert by_direction == {"input": 100 * llm_calls, "output": 50 * llm_calls}
    cost = samples(text, ours.LLM_COST + "_sum")
    assert round(sum(cost.values()), 6) == round(result.llm_usage.cost_usd, 6)
    # Training: the steps the run trained, and its speed.
    steps = samples(text, ours.TRAINING_STEPS)
    assert any(
        'env_id="HalfCheetah-v5"' in labels and v >= trained.timesteps_done
        for labels, v in steps.items()
    ), steps
    assert any(v > 0 for v in samples(text, ours.TRAINING_SPEED).values())

    # The workflow scheduled every activity with the table's deadlines.
    scheduled = 0
    async for event in handle.fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attrs = event.activity_task_scheduled_event_attributes
        name = attrs.activity_type.name
        deadline = timeouts.for_activity(name, 1000)
        assert attrs.start_to_close_timeout.ToTimedelta() == deadline.start_to_close, name
        heartbeat = (
            attrs.heartbeat_timeout.ToTimedelta() if attrs.HasField("heartbeat_timeout") else None
        )
        assert (heartbeat or None) == deadline.heartbeat, name
        scheduled += 1
    assert scheduled >= 5
