"""Connecting to Temporal with the pydantic data converter, with a one-line error on failure.

Where and how to connect is Temporal's standard client configuration (`temporalio.envconfig`,
as the `temporal` CLI reads it): a profile (`TEMPORAL_PROFILE`, default `default`) of the TOML
file at `TEMPORAL_CONFIG_FILE` (else `~/.config/temporalio/temporal.toml`), overridden by
`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY` (turns TLS on), `TEMPORAL_TLS` and
`TEMPORAL_TLS_*` (certificates, server name), `TEMPORAL_GRPC_META_*`. Without an address
anywhere, clients use `localhost:POLICYFORGE_TEMPORAL_PORT`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import Runtime

from workers.settings import Settings

_TRUE = ("1", "true", "yes")
T = TypeVar("T")


class NoServerError(RuntimeError):
    """No Temporal server answers at the configured address; the message says how to start one."""


class ClientConfigError(NoServerError):
    """Temporal's client configuration cannot be read (no such profile or file, a bad file)."""


def _environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables envconfig reads, as ours always meant them: an empty TEMPORAL_* variable
    is unset (compose passes `TEMPORAL_API_KEY: ""`), and TEMPORAL_TLS is on only for 1, true
    or yes."""
    env = {k: v for k, v in environ.items() if not (k.startswith("TEMPORAL_") and not v.strip())}
    if "TEMPORAL_TLS" in env:
        env["TEMPORAL_TLS"] = "true" if env["TEMPORAL_TLS"].strip().lower() in _TRUE else "false"
    return env


def connect_config(
    settings: Settings, *, profile: bool = True, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """`Client.connect`'s target_host, namespace, api_key, tls and rpc_metadata from the
    profile and the environment (`profile=False`: the environment only, as for the server
    `policyforge dev` embeds); ClientConfigError when the configuration cannot be read."""
    config = configured(environ, profile=profile)
    config.setdefault("target_host", settings.address)
    config.setdefault("namespace", settings.temporal_namespace)
    return config


def configured(environ: Mapping[str, str] | None = None, *, profile: bool = True) -> dict[str, Any]:
    """What Temporal's client configuration sets by itself (the profile, the TEMPORAL_*
    variables), before our local default: `policyforge dev`'s record fills in only what this
    leaves out (workers/dev/dev_record.py). ClientConfigError when it cannot be read."""
    from temporalio.envconfig import ClientConfig

    env = _environment(os.environ if environ is None else environ)
    path = env.get("TEMPORAL_CONFIG_FILE")
    if profile and path and not Path(path).expanduser().is_file():
        raise ClientConfigError(f"TEMPORAL_CONFIG_FILE={path}: no such file")
    try:
        return dict(
            ClientConfig.load_client_connect_config(disable_file=not profile, override_env_vars=env)
        )
    except Exception as exc:  # noqa: BLE001 - the bridge's ConfigError and friends
        raise ClientConfigError(f"Temporal client configuration: {exc}") from None


async def connect(
    settings: Settings | None = None,
    timeout: float = 10.0,
    *,
    runtime: Runtime | None = None,
    profile: bool = True,
) -> Client:
    """A client for the configured server and namespace, with the pydantic data converter the
    workflows and activities exchange their contracts with; NoServerError when none answers.

    `runtime`: the worker runtime (metrics endpoint, log forwarding; workers/pools/metrics.py).
    """
    settings = settings or Settings()
    config = connect_config(settings, profile=profile)
    address = config["target_host"]
    try:
        return await asyncio.wait_for(
            Client.connect(
                **config,
                data_converter=pydantic_data_converter,
                runtime=runtime,
            ),
            timeout,
        )
    except Exception as exc:  # noqa: BLE001 - any connection failure gets the same advice
        raise NoServerError(
            f"no Temporal server answers at {address} ({type(exc).__name__}); "
            "start one with `policyforge dev` in another terminal, or set TEMPORAL_ADDRESS "
            "(or TEMPORAL_PROFILE)"
        ) from exc


def run_connected(go: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run a long-lived client coroutine (the pools, the dashboard) until it ends or Ctrl-C;
    no Temporal server ends the process with the one line that says how to start one."""
    import sys

    try:
        asyncio.run(go())
    except NoServerError as exc:
        sys.exit(f"error: {exc}")
    except KeyboardInterrupt:
        pass


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a client coroutine to its end from plain code (`policyforge.Session`, `load_policy`,
    `policyforge play`): in this thread, or, where an event loop already runs here (a Jupyter
    notebook), in a thread of its own, since asyncio.run refuses to nest."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()
