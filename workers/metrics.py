"""A worker process's Temporal runtime: its Prometheus endpoint and the SDK core's log lines.

With POLICYFORGE_METRICS_PORT set (default 9464; 0: none) the process serves
`http://<host>:<port>/metrics`: the SDK's own `temporal_*` metrics (task latencies, polls,
slots, sticky cache, activity and workflow outcomes) and ours, recorded through the SDK's
metric meters (names in activities/metrics.py): training steps and speed (the train activity),
LLM calls, tokens and cost (`LLMUsageMetrics`, on the LLM pool), and sessions by outcome (the
workflow's counter). A port already taken is logged, and the worker runs without an endpoint.
The core's own log lines go to the `temporalio.core` logger, so they come out as JSON too.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog
from temporalio import activity
from temporalio.common import MetricMeter
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from activities.metrics import LLM_COST, LLM_COST_BUCKETS, record_llm_call
from workflows.contracts.usage import LLMCall

METRICS_HOST = "0.0.0.0"  # the compose network's Prometheus scrapes the container


def _core_logs() -> LoggingConfig:
    """The SDK core's warnings and errors to the `temporalio.core` logger (JSON, fields apart)."""
    return LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(
            logger=logging.getLogger("temporalio.core"),
            append_target_to_name=False,
            prepend_target_on_message=False,
            append_log_fields_to_message=False,
        ),
    )


def worker_runtime(port: int, host: str = METRICS_HOST) -> Runtime:
    """The runtime a worker process's client uses: metrics on `host:port` (none for port 0)."""
    if port:
        prometheus = PrometheusConfig(
            bind_address=f"{host}:{port}",
            histogram_bucket_overrides={LLM_COST: list(LLM_COST_BUCKETS)},
        )
        try:
            return Runtime(telemetry=TelemetryConfig(logging=_core_logs(), metrics=prometheus))
        except Exception as exc:  # noqa: BLE001 - the bridge's error for a port in use
            structlog.get_logger().error(
                "metrics endpoint not served",
                address=prometheus.bind_address,
                error=str(exc),
                hint="set POLICYFORGE_METRICS_PORT to a free port (0: none)",
            )
    return Runtime(telemetry=TelemetryConfig(logging=_core_logs()))


def serves_metrics(runtime: Runtime) -> bool:
    """Whether the runtime has a metrics endpoint (none: port 0, or the port was taken)."""
    return runtime.metric_meter is not MetricMeter.noop


class LLMUsageMetrics(Interceptor):
    """Counts the tokens and cost of every LLM call an activity of the pool returns (the
    `usage` its result carries, as the workflow's accounting reads it)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Wrap the pool's activities."""
        return _LLMUsageInbound(next)


class _LLMUsageInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        result = await super().execute_activity(input)
        usage = getattr(result, "usage", None)
        if isinstance(usage, LLMCall):
            record_llm_call(activity.metric_meter(), usage)
        return result
