"""Process entry points shared by the per-pool modules and the CLI."""

from __future__ import annotations

import asyncio
import os
import sys

import structlog

from workers.client import NoServerError, connect
from workers.logs import configure_logging
from workers.pools import run_pools
from workers.settings import Settings


def run_pool_process(names: list[str]) -> None:
    """Connect to TEMPORAL_ADDRESS and run the named pools; nothing embedded is started."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    settings = Settings()
    configure_logging(settings.log_level)
    log = structlog.get_logger()

    async def go() -> None:
        client = await connect(settings)
        log.info("worker started", pools=names, address=settings.address)
        await run_pools(client, settings, names)
        log.info("worker stopped", pools=names)

    try:
        asyncio.run(go())
    except NoServerError as exc:
        sys.exit(f"error: {exc}")
    except KeyboardInterrupt:
        pass
