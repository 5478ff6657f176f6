"""Configuration from environment variables; every variable is listed in the README's table."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"error: {name}={raw!r} is not an integer; set it to a number") from None


@dataclass(frozen=True)
class Settings:
    """Every setting, read from the environment when constructed (one variable per field)."""

    temporal_address: str | None = field(default_factory=lambda: os.environ.get("TEMPORAL_ADDRESS"))
    temporal_namespace: str = field(
        default_factory=lambda: os.environ.get("TEMPORAL_NAMESPACE", "default")
    )
    temporal_api_key: str | None = field(default_factory=lambda: os.environ.get("TEMPORAL_API_KEY"))
    temporal_tls: bool = field(
        default_factory=lambda: os.environ.get("TEMPORAL_TLS", "").lower() in ("1", "true", "yes")
    )
    temporal_ui_url: str | None = field(
        default_factory=lambda: os.environ.get("POLICYFORGE_UI_URL")
    )
    s3_endpoint: str | None = field(
        default_factory=lambda: (
            os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        )
    )
    # Where a browser reaches S3; presigned links only (activities/artifacts.py reads it there).
    s3_public_url: str | None = field(
        default_factory=lambda: os.environ.get("POLICYFORGE_S3_PUBLIC_URL") or None
    )
    state_dir: Path = field(
        default_factory=lambda: Path(
            os.environ.get("POLICYFORGE_STATE_DIR", Path.home() / ".policyforge")
        ).expanduser()
    )
    temporal_port: int = field(default_factory=lambda: _int("POLICYFORGE_TEMPORAL_PORT", 7233))
    ui_port: int = field(default_factory=lambda: _int("POLICYFORGE_UI_PORT", 8233))
    s3_port: int = field(default_factory=lambda: _int("POLICYFORGE_S3_PORT", 8333))
    train_concurrency: int = field(
        default_factory=lambda: _int("POLICYFORGE_TRAIN_CONCURRENCY", os.cpu_count() or 1)
    )
    queue_prefix: str = field(
        default_factory=lambda: os.environ.get("POLICYFORGE_QUEUE_PREFIX", "policyforge")
    )
    log_level: str = field(default_factory=lambda: os.environ.get("POLICYFORGE_LOG_LEVEL", "info"))
    # Each worker process (`policyforge dev`: the one process) serves Prometheus metrics on
    # this port, all interfaces (0: none).
    metrics_port: int = field(default_factory=lambda: _int("POLICYFORGE_METRICS_PORT", 9464))

    # The dashboard (`policyforge ui`, embedded in `policyforge dev`): where it listens, the
    # token it asks for (required off loopback), and where a browser reaches it (for links).
    dashboard_host: str = field(
        default_factory=lambda: os.environ.get("POLICYFORGE_DASHBOARD_HOST", "127.0.0.1")
    )
    dashboard_port: int = field(default_factory=lambda: _int("POLICYFORGE_DASHBOARD_PORT", 8234))
    dashboard_token: str | None = field(
        default_factory=lambda: os.environ.get("POLICYFORGE_DASHBOARD_TOKEN") or None
    )
    dashboard_public_url: str | None = field(
        default_factory=lambda: os.environ.get("POLICYFORGE_DASHBOARD_URL") or None
    )

    @property
    def dashboard_url(self) -> str:
        """Where a browser reaches the dashboard: POLICYFORGE_DASHBOARD_URL, else this host."""
        return (self.dashboard_public_url or f"http://localhost:{self.dashboard_port}").rstrip("/")

    def dashboard_link(self, session_id: str) -> str:
        """A session's page on the dashboard."""
        return f"{self.dashboard_url}/sessions/{session_id}"

    @property
    def address(self) -> str:
        """TEMPORAL_ADDRESS, or the local default (clients take a Temporal profile's address
        before the local default: workers/client.py)."""
        return self.temporal_address or f"localhost:{self.temporal_port}"

    def ui_link(self, workflow_id: str | None = None, namespace: str | None = None) -> str:
        """The Web UI, or a workflow's page in it (in `namespace`: the client's, which a
        Temporal profile may set; else TEMPORAL_NAMESPACE)."""
        base = (self.temporal_ui_url or f"http://localhost:{self.ui_port}").rstrip("/")
        if workflow_id is None:
            return base
        return f"{base}/namespaces/{namespace or self.temporal_namespace}/workflows/{workflow_id}"
