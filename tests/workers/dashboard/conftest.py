"""Dashboards on free ports against the session's Temporal dev server and SeaweedFS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from tests.workers.dashboard.client import TOKEN
from workers.dashboard.connections import Limits
from workers.dashboard.server import serving
from workers.dev.services import free_port
from workers.settings import Settings


@dataclass
class Served:
    url: str
    app: Any  # the FastAPI app, for what a test changes while it runs


async def _dashboard(
    temporal_env: Any, token: str | None, limits: Limits | None = None
) -> AsyncIterator[Served]:
    settings = replace(
        Settings(), dashboard_host="127.0.0.1", dashboard_port=free_port(), dashboard_token=token
    )
    async with serving(temporal_env.client, settings, limits) as server:
        yield Served(f"http://127.0.0.1:{settings.dashboard_port}", server.config.app)


@pytest.fixture
async def open_dashboard(temporal_env, s3) -> AsyncIterator[str]:
    async for served in _dashboard(temporal_env, None):
        yield served.url


@pytest.fixture
async def token_dashboard(temporal_env, s3) -> AsyncIterator[str]:
    async for served in _dashboard(temporal_env, TOKEN):
        yield served.url


@pytest.fixture
async def token_served(temporal_env, s3) -> AsyncIterator[Served]:
    async for served in _dashboard(temporal_env, TOKEN):
        yield served


@pytest.fixture
async def proxied_dashboard(temporal_env, s3, monkeypatch) -> AsyncIterator[str]:
    """A token dashboard behind a proxy on this machine (FORWARDED_ALLOW_IPS names it)."""
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1")
    async for served in _dashboard(temporal_env, TOKEN):
        yield served.url


# Short read deadlines, so that a test sees half-sent requests closed within seconds.
QUICK = Limits(head_timeout_s=2.0, body_timeout_s=2.0)


@pytest.fixture
async def quick_dashboard(temporal_env, s3) -> AsyncIterator[str]:
    async for served in _dashboard(temporal_env, TOKEN, QUICK):
        yield served.url


@pytest.fixture
async def capped_dashboard(temporal_env, s3) -> AsyncIterator[str]:
    """At most 50 connections (the default is 1,000)."""
    async for served in _dashboard(temporal_env, TOKEN, Limits(max_connections=50)):
        yield served.url
