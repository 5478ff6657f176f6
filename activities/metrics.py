"""Our Prometheus metrics, recorded through the Temporal SDK's metric meters.

Each worker process serves them on its metrics endpoint beside the SDK's own `temporal_*`
metrics (workers/pools/metrics.py). The meters of an activity carry its namespace, task queue and
activity type; outside a worker with metrics (tests, `policyforge train`) they record nothing.
Sessions by outcome (`policyforge_sessions`) are counted by the workflow itself
(`workflow.metric_meter()`, not counted again on replay).

A gauge of one run (its training speed) is a series per run, labelled by its session and run, so
that two sessions on one env do not overwrite each other. The SDK's meters cannot drop a series,
so these live in `RUN_GAUGES`, which the endpoint serves beside the SDK's metrics and which drops
a run's series a while after the run ended (one scrape still sees its last value).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from temporalio import activity
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


Labels = tuple[tuple[str, str], ...]


@dataclass
class _Series:
    value: float
    ended_at: float | None = None


class RunGauges:
    """Gauges with a series per run, in the Prometheus text format: a series is dropped `keep_s`
    after its run ended (`end`), so that the label sets do not grow with every run a worker
    ever ran. Set from activities, read by the metrics endpoint's thread."""

    def __init__(self, keep_s: float = 120.0, clock: Callable[[], float] = time.monotonic):
        self.keep_s = keep_s
        self._clock = clock
        self._lock = threading.Lock()
        self._about: dict[str, str] = {}  # name -> its HELP text
        self._series: dict[str, dict[Labels, _Series]] = {}

    def set(self, name: str, about: str, labels: Labels, value: float) -> None:
        """The run's current value (a run that had ended is live again)."""
        now = self._clock()
        with self._lock:
            self._prune(now)
            self._about[name] = about
            self._series.setdefault(name, {})[labels] = _Series(value)

    def end(self, name: str, labels: Labels) -> None:
        """The run ended: its series goes once `keep_s` has passed."""
        with self._lock:
            series = self._series.get(name, {}).get(labels)
            if series is not None and series.ended_at is None:
                series.ended_at = self._clock()

    def render(self) -> str:
        """Every live series, as Prometheus text (the expired ones dropped now)."""
        now = self._clock()
        lines: list[str] = []
        with self._lock:
            self._prune(now)
            for name, by_labels in self._series.items():
                if not by_labels:
                    continue
                lines += [f"# HELP {name} {self._about[name]}", f"# TYPE {name} gauge"]
                for labels, series in sorted(by_labels.items(), key=lambda kv: kv[0]):
                    text = ",".join(f'{k}="{_escaped(v)}"' for k, v in labels)
                    lines.append(f"{name}{{{text}}} {series.value!r}")
        return "".join(line + "\n" for line in lines)

    def _prune(self, now: float) -> None:
        for by_labels in self._series.values():
            for labels in [
                labels
                for labels, series in by_labels.items()
                if series.ended_at is not None and now - series.ended_at >= self.keep_s
            ]:
                del by_labels[labels]


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


RUN_GAUGES = RunGauges()


def _this_run() -> tuple[str, str]:
    """(session id, run) of the running activity: its workflow id and activity id (a retry is
    the same run); empty outside an activity."""
    if not activity.in_activity():
        return "", ""
    info = activity.info()
    return info.workflow_id or "", info.activity_id


class TrainingMeter:
    """A training run's timesteps (a counter by env and algorithm: rate() is the pool's
    steps/s) and its current speed (a gauge per session and run, dropped after the run), from
    the child's progress events. The session and run default to the running activity's."""

    def __init__(
        self,
        meter: MetricMeter,
        env_id: str,
        algo: str,
        start_timesteps: int,
        *,
        session_id: str | None = None,
        run: str | None = None,
        gauges: RunGauges = RUN_GAUGES,
    ) -> None:
        meter = meter.with_additional_attributes({"env_id": env_id, "algo": algo})
        self._steps = meter.create_counter(TRAINING_STEPS, "environment steps trained", "steps")
        # Outside a worker with metrics the counter records nothing; the gauge neither.
        self._gauges = gauges if meter is not MetricMeter.noop else None
        default_session, default_run = _this_run()
        self._labels: Labels = (
            ("env_id", env_id),
            ("algo", algo),
            ("session_id", default_session if session_id is None else session_id),
            ("run", default_run if run is None else run),
        )
        if self._gauges is not None:
            # The series goes with the meter, whenever the run lets go of it without finish().
            self._ended = weakref.finalize(self, self._gauges.end, TRAINING_SPEED, self._labels)
        self._timesteps = start_timesteps  # a resumed run counts from its checkpoint
        self._at: float | None = None  # the first event's speed would include start-up

    def progress(self, timesteps: int) -> None:
        """The child reported `timesteps` done in all."""
        now = time.monotonic()
        done = timesteps - self._timesteps
        if done > 0:
            self._steps.add(done)
            if self._gauges is not None and self._at is not None and now > self._at:
                self._gauges.set(
                    TRAINING_SPEED,
                    "environment steps per second of a training run",
                    self._labels,
                    done / (now - self._at),
                )
        self._timesteps, self._at = max(timesteps, self._timesteps), now

    def finish(self) -> None:
        """The run ended: its speed's series is dropped after a while."""
        if self._gauges is not None:
            self._ended()


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
