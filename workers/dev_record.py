"""Where a running `policyforge dev` listens, recorded for the commands run beside it.

`policyforge dev` writes `dev.json` into its state folder once its services answer: Temporal's
address and namespace, the Web UI, the dashboard, S3 and its bucket, the queue prefix (no
secrets). A copy goes to `~/.policyforge/running/`, so that a command given only
TEMPORAL_ADDRESS (as the README once said to) finds the rest. Both go when dev stops.

Every other command reads the record before its settings and takes from it only what is not
set: a variable or a Temporal profile always wins, and a record of another server than the one
configured is not read at all. A record whose process is gone (its pid dead, or reused by
another process since) is ignored, so a dev killed with SIGKILL leaves nothing that misleads.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, MutableMapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

RECORD = "dev.json"


@dataclass(frozen=True)
class DevRecord:
    """What one `policyforge dev` process serves, and which process it is."""

    pid: int
    # The process's start time (/proc/<pid>/stat): a pid reused by another process is not dev.
    pid_start: str | None
    temporal_address: str
    namespace: str
    ui_url: str | None
    dashboard_url: str | None
    s3_endpoint: str | None
    s3_embedded: bool
    bucket: str
    queue_prefix: str


def default_state_dir() -> Path:
    """The state folder `policyforge dev` uses without POLICYFORGE_STATE_DIR."""
    return Path.home() / ".policyforge"


def running_dir() -> Path:
    """Where every running dev leaves a copy of its record (one file per process)."""
    return default_state_dir() / "running"


def state_dir(environ: MutableMapping[str, str]) -> Path:
    """The state folder the settings name (POLICYFORGE_STATE_DIR, else the default)."""
    given = environ.get("POLICYFORGE_STATE_DIR", "").strip()
    return Path(given).expanduser() if given else default_state_dir()


def process_start(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot (None: not known here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its last ")".
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def alive(record: DevRecord) -> bool:
    """Whether the process that wrote `record` still runs (and is the same process)."""
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    now = process_start(record.pid)
    return record.pid_start is None or now is None or now == record.pid_start


def read_record(path: Path) -> DevRecord | None:
    """The record at `path` when it reads and its process runs; else None."""
    try:
        data = json.loads(path.read_text())
        record = DevRecord(**{k: data[k] for k in DevRecord.__dataclass_fields__})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not isinstance(record.pid, int) or not isinstance(record.temporal_address, str):
        return None
    return record if alive(record) else None


def write_record(record: DevRecord, folder: Path) -> list[Path]:
    """Write `record` into `folder` and the running list (each atomically); the files."""
    paths = [folder / RECORD, running_dir() / f"dev-{record.pid}.json"]
    text = json.dumps(asdict(record), indent=2)
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{record.pid}")
        tmp.write_text(text)
        os.replace(tmp, path)
    _prune()
    return paths


def remove_record(paths: list[Path], pid: int) -> None:
    """Remove the files `write_record` wrote, each only while it is still this process's."""
    for path in paths:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("pid") == pid:
                path.unlink()


def _prune() -> None:
    """Drop the running list's records of processes that are gone (a dev killed outright)."""
    for path in _running():
        if read_record(path) is None:
            with contextlib.suppress(OSError):
                path.unlink()


def _running() -> Iterator[Path]:
    with contextlib.suppress(OSError):
        yield from sorted(running_dir().glob("dev-*.json"))


def _loopback(address: str) -> str:
    """host:port with every name of this machine's loopback written the same way."""
    host, _, port = address.strip().rpartition(":")
    host = host.strip("[]").lower()
    return f"{'loopback' if host in ('localhost', '127.0.0.1', '::1') else host}:{port}"


def find_record(environ: MutableMapping[str, str]) -> DevRecord | None:
    """The live record that fits the settings: the state folder's when no Temporal address is
    configured; else one (the state folder's or a running dev's) serving that address."""
    own = read_record(state_dir(environ) / RECORD)
    others = list(_running())
    if own is None and not others:
        return None
    address = _explicit(environ).get("target_host")
    if address is None:
        return own
    for record in (own, *(read_record(path) for path in others)):
        if record is not None and _loopback(record.temporal_address) == _loopback(address):
            return record
    return None


def _explicit(environ: MutableMapping[str, str]) -> dict[str, Any]:
    """What a Temporal profile or TEMPORAL_* variables set (target_host, namespace, ...)."""
    from workers.client import ClientConfigError, configured

    try:
        return configured(environ)
    except ClientConfigError:
        # An unreadable configuration is still the person's choice: connecting says what is
        # wrong with it, and no record stands in for it.
        return {"target_host": None, "unreadable": True}


def apply_record(environ: MutableMapping[str, str], *, dashboard: bool = True) -> DevRecord | None:
    """Set, in `environ`, what a running dev's record says and the settings leave out (see the
    module docstring); the record used. `dashboard=False`: not the dashboard's address (the
    command serves its own)."""
    record = find_record(environ)
    if record is None:
        return None
    explicit = _explicit(environ)
    if explicit.get("unreadable"):
        return None

    def fill(name: str, value: str | None) -> None:
        if value and not environ.get(name, "").strip():
            environ[name] = value

    if explicit.get("target_host") is None:
        environ["TEMPORAL_ADDRESS"] = record.temporal_address
    if explicit.get("namespace") is None:
        environ["TEMPORAL_NAMESPACE"] = record.namespace
    fill("POLICYFORGE_UI_URL", record.ui_url)
    if dashboard:
        fill("POLICYFORGE_DASHBOARD_URL", record.dashboard_url)
    fill("POLICYFORGE_QUEUE_PREFIX", record.queue_prefix)
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    if record.s3_endpoint and endpoint in (None, "", record.s3_endpoint):
        fill("AWS_ENDPOINT_URL_S3", record.s3_endpoint)
        fill("POLICYFORGE_BUCKET", record.bucket)
        if record.s3_embedded and not environ.get("AWS_ACCESS_KEY_ID"):
            # Dev's SeaweedFS takes any key (it is on loopback only); boto3 wants one to sign.
            environ["AWS_ACCESS_KEY_ID"] = environ["AWS_SECRET_ACCESS_KEY"] = "policyforge"
    return record


_applied: list[DevRecord | None] = []


def use_dev_record() -> DevRecord | None:
    """`apply_record` on this process's environment, once: what the public API
    (`policyforge.Session`, `load_policy` of a session) does before it first connects, as the
    CLI does at start."""
    if not _applied:
        _applied.append(apply_record(os.environ))
    return _applied[0]
