"""The metrics tell sessions apart: the training speed is a series per session and run (two runs
on one env are two series, not one overwritten), served on the worker's endpoint beside the
SDK's metrics, and a finished run's series goes a while after it ended (label sets do not grow
with every run a worker ever ran)."""

from __future__ import annotations

import gc
import urllib.request

import pytest
from temporalio import activity
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.testing import ActivityEnvironment

from activities import metrics as ours
from activities.metrics import RUN_GAUGES, RunGauges, TrainingMeter
from workers.dev.services import free_port
from workers.pools.metrics import serves_metrics, worker_runtime


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.read().decode()


def speeds(text: str, sessions: tuple[str, ...] = ("pf-a-1", "pf-b-2")) -> dict[str, float]:
    """The training speed's series of these sessions (another test's run in this process may
    still show): {'{labels}': value}."""
    out = {}
    for line in text.splitlines():
        if line.startswith(ours.TRAINING_SPEED + "{") and any(
            f'session_id="{s}"' in line for s in sessions
        ):
            labels, value = line.rsplit(" ", 1)
            out[labels.removeprefix(ours.TRAINING_SPEED)] = float(value)
    return out


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_two_runs_on_one_env_are_two_series_and_a_finished_runs_goes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(RUN_GAUGES, "_clock", clock)
    port = free_port()
    runtime = worker_runtime(port, host="127.0.0.1")
    assert serves_metrics(runtime)
    meters = [
        TrainingMeter(runtime.metric_meter, "HalfCheetah-v5", "ppo", 0, session_id=s, run=r)
        for s, r in (("pf-a-1", "c0_default_seed_0"), ("pf-b-2", "c0_default_seed_0"))
    ]
    for meter in meters:
        meter.progress(100)
        meter.progress(2_100)

    text = scrape(port)
    series = speeds(text)
    assert sorted(series) == [
        '{env_id="HalfCheetah-v5",algo="ppo",session_id="pf-a-1",run="c0_default_seed_0"}',
        '{env_id="HalfCheetah-v5",algo="ppo",session_id="pf-b-2",run="c0_default_seed_0"}',
    ]
    assert all(v > 0 for v in series.values())
    assert text.count(f"# TYPE {ours.TRAINING_SPEED} gauge") == 1
    # The SDK's exporter answered: the steps counter (by env: rate() is the pool's steps/s).
    assert "temporal metrics unavailable" not in text
    assert any(line.startswith(ours.TRAINING_STEPS) for line in text.splitlines())

    # The first run ends: one scrape still sees its last value, and after a while it is gone.
    meters[0].finish()
    assert len(speeds(scrape(port))) == 2
    clock.now += RUN_GAUGES.keep_s
    assert [k for k in speeds(scrape(port)) if "pf-a-1" in k] == []
    assert len(speeds(scrape(port))) == 1
    # A run that lets go of its meter without finish() ends all the same.
    del meters[1], meter
    gc.collect()
    clock.now += RUN_GAUGES.keep_s
    assert speeds(scrape(port)) == {}


async def test_a_runs_series_is_named_after_the_running_activity() -> None:
    gauges = RunGauges()

    async def train() -> None:
        meter = TrainingMeter(activity.metric_meter(), "Ant-v5", "sac", 0, gauges=gauges)
        meter.progress(10)
        meter.progress(20)

    env = ActivityEnvironment()
    env.metric_meter = worker_runtime(0).metric_meter  # noop: nothing recorded
    await env.run(train)
    assert gauges.render() == ""

    runtime = Runtime(
        telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=f"127.0.0.1:{free_port()}"))
    )
    env.metric_meter = runtime.metric_meter
    await env.run(train)
    info = env.info
    [line] = [x for x in gauges.render().splitlines() if not x.startswith("#")]
    assert f'session_id="{info.workflow_id}",run="{info.activity_id}"' in line


def test_label_values_are_escaped() -> None:
    gauges = RunGauges()
    gauges.set("g", "a gauge", (("run", 'a"b\\c\nd'),), 1.5)
    assert gauges.render() == ('# HELP g a gauge\n# TYPE g gauge\ng{run="a\\"b\\\\c\\nd"} 1.5\n')
