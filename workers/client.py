"""Connecting to Temporal with the pydantic data converter, with a one-line error on failure."""

from __future__ import annotations

import asyncio

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from workers.settings import Settings


class NoServerError(RuntimeError):
    """No Temporal server answers at the configured address; the message says how to start one."""


async def connect(settings: Settings | None = None, timeout: float = 10.0) -> Client:
    """A client for the configured server and namespace, with the pydantic data converter the
    workflows and activities exchange their contracts with; NoServerError when none answers."""
    settings = settings or Settings()
    try:
        return await asyncio.wait_for(
            Client.connect(
                settings.address,
                namespace=settings.temporal_namespace,
                api_key=settings.temporal_api_key,
                tls=settings.temporal_tls or bool(settings.temporal_api_key),
                data_converter=pydantic_data_converter,
            ),
            timeout,
        )
    except Exception as exc:  # noqa: BLE001 - any connection failure gets the same advice
        raise NoServerError(
            f"no Temporal server answers at {settings.address} ({type(exc).__name__}); "
            "start one with `policyforge dev` in another terminal, or set TEMPORAL_ADDRESS"
        ) from exc
