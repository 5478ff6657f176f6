"""Our Prometheus metrics, recorded through the Temporal SDK's metric meters.

Each worker process serves them on its metrics endpoint beside the SDK's own `temporal_*`
metrics (workers/metrics.py). The meters of an activity carry its namespace, task queue and
activity type; outside a worker with metrics (tests, `policyforge train`) they record nothing.
Sessions by outcome (`policyforge_sessions`) are counted by the workflow itself
(`workflow.metric_meter()`, not counted again on replay).
"""

from __future__ import annotations

import time

from temporalio.common import MetricMeter

from workflows.contracts.usage import LLMCall

TRAINING_STEPS = "policyforge_training_steps"
TRAINING_SPEED = "policyforge_training_steps_per_second"
LLM_CALLS = "policyforge_llm_calls"
LLM_TOKENS = "policyforge_llm_tokens"
LLM_COST = "policyforge_llm_cost_usd"
SESSIONS = "policyforge_sessions"  # the workflow's counter (workflows/session.py)

# Bucket boundaries of the per-call cost histogram (US dollars): its _sum is the spend.
LLM_COST_BUCKETS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


class TrainingMeter:
    """A training run's timesteps (a counter: rate() is the pool's steps/s) and its current
    speed (a gauge), from the child's progress events."""

    def __init__(self, meter: MetricMeter, env_id: str, algo: str, start_timesteps: int) -> None:
        meter = meter.with_additional_attributes({"env_id": env_id, "algo": algo})
        self._steps = meter.create_counter(TRAINING_STEPS, "environment steps trained", "steps")
        self._speed = meter.create_gauge_float(
            TRAINING_SPEED, "environment steps per second of the latest training run", "steps/s"
        )
        self._timesteps = start_timesteps  # a resumed run counts from its checkpoint
        self._at: float | None = None  # the first event's speed would include start-up

    def progress(self, timesteps: int) -> None:
        """The child reported `timesteps` done in all."""
        now = time.monotonic()
        done = timesteps - self._timesteps
        if done > 0:
            self._steps.add(done)
            if self._at is not None and now > self._at:
                self._speed.set(done / (now - self._at))
        self._timesteps, self._at = max(timesteps, self._timesteps), now


def record_llm_call(meter: MetricMeter, call: LLMCall) -> None:
    """One LLM call's tokens and cost (calls to a model without a known price count no cost)."""
    meter = meter.with_additional_attributes({"agent": call.agent, "model": call.model})
    meter.create_counter(LLM_CALLS, "LLM calls", "calls").add(1)
    tokens = meter.create_counter(LLM_TOKENS, "LLM tokens", "tokens")
    tokens.add(call.input_tokens, {"direction": "input"})
    tokens.add(call.output_tokens, {"direction": "output"})
    if call.cost_usd is not None:
        meter.create_histogram_float(LLM_COST, "estimated cost of one LLM call", "USD").record(
            call.cost_usd
        )
