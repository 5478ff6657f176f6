"""Process entry points shared by the per-pool modules and the CLI."""

from __future__ import annotations

import os

import structlog

from workers.client import connect, run_connected
from workers.logs import configure_logging
from workers.metrics import serves_metrics, worker_runtime
from workers.pools import run_pools
from workers.process_exit import run_and_exit
from workers.settings import Settings


def run_pool_process(names: list[str]) -> None:
    """Connect to TEMPORAL_ADDRESS and run the named pools; nothing embedded is started.

    Called from `python -m workers.<pool>` and `policyforge worker`: ends the process.
    """
    run_and_exit(lambda: _run_pools(names))


def _run_pools(names: list[str]) -> None:
    os.environ.setdefault("MUJOCO_GL", "egl")
    settings = Settings()
    configure_logging(settings.log_level)
    log = structlog.get_logger()

    runtime = worker_runtime(settings.metrics_port)

    async def go() -> None:
        client = await connect(settings, runtime=runtime)
        log.info(
            "worker started",
            pools=names,
            address=client.service_client.config.target_host,
            namespace=client.namespace,
            metrics_port=settings.metrics_port if serves_metrics(runtime) else None,
        )
        await run_pools(client, settings, names)
        log.info("worker stopped", pools=names)

    run_connected(go)
