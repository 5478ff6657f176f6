"""A worker process's Temporal runtime: its Prometheus endpoint and the SDK core's log lines.

With POLICYFORGE_METRICS_PORT set (default 9464; 0: none) the process serves
`http://<host>:<port>/metrics`: the SDK's own `temporal_*` metrics (task latencies, polls,
slots, sticky cache, activity and workflow outcomes) and ours, recorded through the SDK's
metric meters (names in activities/metrics.py): training steps and speed (the train activity),
LLM calls, tokens and cost (`LLMUsageMetrics`, on the LLM pool), and sessions by outcome (the
workflow's counter). A port already taken is logged, and the worker runs without an endpoint.
The core's own log lines go to the `temporalio.core` logger, so they come out as JSON too.

The endpoint is ours (`MetricsEndpoint`): it serves the SDK's exporter (on a loopback port of
its own) followed by the gauges of one run each (`activities.metrics.RUN_GAUGES`: training speed
by session and run), whose series the SDK could not drop once a run ends.
"""

from __future__ import annotations

import logging
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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

from activities.metrics import LLM_COST, LLM_COST_BUCKETS, RUN_GAUGES, RunGauges, record_llm_call
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


class MetricsEndpoint:
    """`http://<host>:<port>/metrics`: the SDK exporter's text at `sdk_address`, then the
    per-run gauges. Bound when made (OSError for a port in use), served from a daemon thread."""

    def __init__(
        self, host: str, port: int, sdk_address: str, gauges: RunGauges = RUN_GAUGES
    ) -> None:
        self.sdk_address = sdk_address
        self.gauges = gauges
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server name
                if self.path.split("?", 1)[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                body = endpoint.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # a line per scrape is noise

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="metrics-endpoint", daemon=True
        )

    def start(self) -> MetricsEndpoint:
        self.thread.start()
        return self

    def close(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    def text(self) -> str:
        """The SDK's metrics (a comment line when it does not answer), then the run gauges."""
        try:
            with _DIRECT.open(f"http://{self.sdk_address}/metrics", timeout=5) as response:
                sdk = response.read().decode()
        except OSError as exc:
            sdk = f"# temporal metrics unavailable: {exc}\n"
        if sdk and not sdk.endswith("\n"):
            sdk += "\n"
        return sdk + self.gauges.render()


# The SDK's exporter is on loopback: never through a proxy from the environment.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# Each endpoint serves as long as the process (a runtime cannot be closed either).
_ENDPOINTS: list[MetricsEndpoint] = []


def worker_runtime(port: int, host: str = METRICS_HOST) -> Runtime:
    """The runtime a worker process's client uses: metrics on `host:port` (none for port 0)."""
    if port:
        from workers.dev.services import free_port

        log = structlog.get_logger()
        try:
            endpoint = MetricsEndpoint(host, port, f"127.0.0.1:{free_port()}")
        except OSError as exc:
            log.error(
                "metrics endpoint not served",
                address=f"{host}:{port}",
                error=str(exc),
                hint="set POLICYFORGE_METRICS_PORT to a free port (0: none)",
            )
            return Runtime(telemetry=TelemetryConfig(logging=_core_logs()))
        prometheus = PrometheusConfig(
            bind_address=endpoint.sdk_address,
            histogram_bucket_overrides={LLM_COST: list(LLM_COST_BUCKETS)},
        )
        try:
            runtime = Runtime(telemetry=TelemetryConfig(logging=_core_logs(), metrics=prometheus))
        except Exception as exc:  # noqa: BLE001 - the bridge's error for a port in use
            endpoint.close()
            log.error(
                "metrics endpoint not served",
                address=prometheus.bind_address,
                error=str(exc),
                hint="the SDK's exporter could not bind a loopback port; try again",
            )
        else:
            _ENDPOINTS.append(endpoint.start())
            return runtime
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
