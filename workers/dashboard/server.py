"""Serving the dashboard: `policyforge ui` on its own, or beside the pools in `policyforge dev`.

Both run uvicorn inside the caller's event loop with the caller's Temporal client, so the
embedded dashboard costs no process of its own. The address is checked first: off loopback,
no token means no dashboard (one line says what to set). Each request's head and body have a
deadline and the connections are capped (`connections.py`); X-Forwarded-For and -Proto are
believed only from the proxies named in FORWARDED_ALLOW_IPS.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator

import uvicorn
from temporalio.client import Client

from workers.dashboard.auth import AuthConfigError, Gate, check_config
from workers.dashboard.connections import Limits, bounded
from workers.settings import Settings


class _Embedded(uvicorn.Server):
    """A server that leaves the process's signals to its host (`policyforge dev`'s pools)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def trusted_proxies() -> str | None:
    """The proxies whose X-Forwarded-For and X-Forwarded-Proto the dashboard believes
    (uvicorn's FORWARDED_ALLOW_IPS: addresses, comma-separated), None when unset. uvicorn's own
    default believes any process on this machine, whose forged X-Forwarded-For got a fresh
    allowance of wrong tokens with each address it named."""
    return os.environ.get("FORWARDED_ALLOW_IPS") or None


def build(
    client: Client, settings: Settings, embedded: bool = False, limits: Limits | None = None
) -> uvicorn.Server:
    """A uvicorn server for the dashboard (not started); AuthConfigError when unsafe."""
    from activities.artifacts import ArtifactStore
    from workers.dashboard.app import create_app

    check_config(settings.dashboard_host, settings.dashboard_token)
    app = create_app(client, ArtifactStore(), settings, Gate(settings.dashboard_token))
    proxies = trusted_proxies()
    config = uvicorn.Config(
        app,
        host=settings.dashboard_host,
        port=settings.dashboard_port,
        http=bounded(limits or Limits()),
        proxy_headers=proxies is not None,
        forwarded_allow_ips=proxies,
        log_config=None,  # our logging (workers/logs.py) takes uvicorn's lines as JSON
        access_log=False,
        lifespan="off",
    )
    return _Embedded(config) if embedded else uvicorn.Server(config)


@contextlib.asynccontextmanager
async def serving(
    client: Client, settings: Settings, limits: Limits | None = None
) -> AsyncIterator[uvicorn.Server]:
    """Run the dashboard in this loop for the duration of the block (`policyforge dev`)."""
    server = build(client, settings, embedded=True, limits=limits)
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():
        await asyncio.sleep(0.05)
    if task.done():
        task.result()  # raises what stopped it (the port is taken, ...)
        raise SystemExit(f"error: dashboard: could not listen on port {settings.dashboard_port}")
    try:
        yield server
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await task


def run_ui(settings: Settings) -> None:
    """`policyforge ui`: the dashboard against TEMPORAL_ADDRESS and the configured S3."""
    from workers.client import connect, run_connected
    from workers.logs import configure_logging

    configure_logging(settings.log_level)
    try:
        check_config(settings.dashboard_host, settings.dashboard_token)
    except AuthConfigError as exc:
        sys.exit(f"error: {exc}")

    async def go() -> None:
        client = await connect(settings)
        server = build(client, settings)
        print(f"policyforge dashboard: {settings.dashboard_url}", flush=True)
        await server.serve()

    run_connected(go)
