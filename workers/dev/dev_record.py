"""Where a running `policyforge dev` listens, recorded for the commands run beside it.

`policyforge dev` writes `dev.json` into its state folder once its services answer: Temporal's
address and namespace, the Web UI, the dashboard, S3 and its bucket, the queue prefix (no
secrets). A copy goes to `~/.policyforge/running/`, so that a command given only
TEMPORAL_ADDRESS (as the README once said to) finds the rest. Both go when dev stops.

Every other command reads the record before its settings and takes from it only what is not
set: a variable or a Temporal profile always wins, and a record of another server than the one
configured is not read at all. A record whose process is gone (its pid dead, or reused by
another process since) is ignored, so a dev killed with SIGKILL leaves nothing that misleads.

The record steers where commands connect and what links they print, so it is read only when it
is ours (issue 42): owned by this user in a folder only this user can write, naming a live
process of this user that is the recorded `policyforge dev` (pid, start time and command line),
every address in it local and every text in it plain. Anything else is ignored as if absent,
with one line on stderr naming the check that failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

RECORD = "dev.json"
# The hosts a record may name: this machine's loopback, however it is written.
LOCAL_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# The process table with pid, start time, owner and command line (Linux).
PROC = Path("/proc")


class UntrustedRecord(Exception):
    """Why a record is not read (one line, the check that failed)."""


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
    # The process's command line (/proc/<pid>/cmdline): what shows it is `policyforge dev`.
    command: tuple[str, ...] = ()


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


def private_folder(folder: Path) -> Path:
    """Create `folder` (and its missing parents) for this user alone, or tighten it to 0700 and
    its files to 0600: others must neither read dev's state (temporal.db) nor plant files in it.
    PermissionError when the folder is another user's."""
    for missing in reversed([p for p in (folder, *folder.parents) if not p.exists()]):
        missing.mkdir(mode=0o700, exist_ok=True)
    owner = folder.stat().st_uid
    if owner != os.getuid():
        raise PermissionError(f"{folder} is owned by uid {owner}, not by this user")
    folder.chmod(0o700)
    # A folder from an older release: the files dev made were world-readable (only those: the
    # folder may be one of the person's, named by POLICYFORGE_STATE_DIR).
    for pattern in _STATE_FILES:
        for child in folder.glob(pattern):
            with contextlib.suppress(OSError):
                if stat.S_ISREG(child.lstat().st_mode):
                    child.chmod(0o600)
    return folder


# The files dev and its services write into the state folder.
_STATE_FILES = (RECORD, "temporal.db*", "temporal.log", "seaweedfs.log")


def process_start(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot (None: not known here)."""
    try:
        stat_line = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its last ")".
    fields_ = stat_line.rsplit(")", 1)[-1].split()
    return fields_[19] if len(fields_) > 19 else None


def process_command(pid: int) -> tuple[str, ...] | None:
    """The command line of process `pid` (None: not known here)."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    return tuple(os.fsdecode(arg) for arg in raw.split(b"\0")[:-1])


def is_dev_command(argv: Sequence[str]) -> bool:
    """Whether `argv` runs `policyforge dev`: the console script (run directly, or by its
    interpreter as the kernel shows a script run through its shebang) or `python -m
    workers.cli`, with `dev` as the command."""
    rest = _after_program(list(argv))
    return rest is not None and rest[:1] == ["dev"]


def _after_program(argv: list[str]) -> list[str] | None:
    """The arguments after the part of `argv` that names policyforge's CLI; None if none does."""
    if argv and Path(argv[0]).name == "policyforge":
        return argv[1:]
    i = 1  # argv[0] is an interpreter: skip its options, then the script or `-m module`
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "-m":
            return argv[i + 2 :] if argv[i + 1 : i + 2] == ["workers.cli"] else None
        if argv[i] == "-c":
            return None
        i += 2 if argv[i] in ("-X", "-W") else 1
    if i < len(argv) and Path(argv[i]).name == "policyforge":
        return argv[i + 1 :]
    return None


def is_local_address(address: str) -> bool:
    """Whether `address` (host:port, IPv6 in brackets or not) is on this machine's loopback."""
    host, sep, port = address.rpartition(":")
    return bool(sep) and port.isdigit() and host.strip("[]").lower() in LOCAL_HOSTS


def is_local_url(url: str) -> bool:
    """Whether `url` is an http(s) URL on this machine's loopback, with no user part."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and parts.hostname in LOCAL_HOSTS
        and parts.username is None
        and parts.password is None
    )


def _plain(text: str) -> bool:
    """Printable ASCII only: nothing a terminal or a link could read as more than it shows."""
    return text.isascii() and text.isprintable()


def _own_file(path: Path) -> str:
    """The text of `path` when it and its folder are this user's alone to write."""
    try:
        # Opened without following a link and checked on the open file: nothing swaps it.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError:
        raise UntrustedRecord("it is not a regular file (a link?)") from None
    with os.fdopen(fd, "rb") as f:
        _owned("its folder", path.parent.stat())
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedRecord("it is not a regular file")
        _owned("it", info)
        return f.read(1 << 16).decode("utf-8", errors="strict")


def _owned(what: str, info: os.stat_result) -> None:
    """UntrustedRecord unless `info` is this user's and no one else may write it."""
    if info.st_uid != os.getuid():
        raise UntrustedRecord(f"{what} is owned by uid {info.st_uid}, not by this user")
    if info.st_mode & 0o022:
        mode = stat.S_IMODE(info.st_mode)
        raise UntrustedRecord(f"{what} is writable by group or others (mode {mode:o})")


def _parse(text: str) -> DevRecord:
    """The record in `text`, each field of its type and every text in it plain."""
    try:
        data = json.loads(text)
    except ValueError:
        raise UntrustedRecord("it is not JSON") from None
    if not isinstance(data, dict):
        raise UntrustedRecord("it is not a record")
    values: dict[str, Any] = {}
    for f in fields(DevRecord):
        if f.name not in data and f.name != "command":
            raise UntrustedRecord(f"it has no {f.name}")
        values[f.name] = _field(f.name, data.get(f.name, []))
    return DevRecord(**values)


# The fields that may be null.
_OPTIONAL = frozenset({"pid_start", "ui_url", "dashboard_url", "s3_endpoint"})


def _field(name: str, value: object) -> object:
    """`value` checked for field `name`'s type; text must be plain."""
    if name == "pid":
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    elif name == "s3_embedded":
        if isinstance(value, bool):
            return value
    elif name == "command":
        if isinstance(value, list) and all(isinstance(arg, str) for arg in value):
            # Never printed, only compared with the live process's: any printable text.
            if not all(arg.isprintable() for arg in value):
                raise UntrustedRecord("its command holds control characters")
            return tuple(value)
    elif isinstance(value, str):
        if not _plain(value):
            raise UntrustedRecord(f"its {name} holds control or non-ASCII characters")
        return value
    elif value is None and name in _OPTIONAL:
        return None
    raise UntrustedRecord(f"its {name} is not of the expected type")


def _check_local(record: DevRecord) -> None:
    """Every address and link in `record` on this machine's loopback."""
    if not is_local_address(record.temporal_address):
        raise UntrustedRecord("its temporal_address is not local (127.0.0.1, ::1, localhost)")
    for name in ("ui_url", "dashboard_url", "s3_endpoint"):
        url = getattr(record, name)
        if url is not None and not is_local_url(url):
            raise UntrustedRecord(f"its {name} is not a local http(s) URL")


def _check_process(record: DevRecord) -> None:
    """The recorded process runs, is this user's, and is the recorded `policyforge dev`."""
    pid = record.pid
    if not PROC.is_dir():
        # No /proc (macOS): only whether the pid runs can be told, not which process it is.
        if not _pid_runs(pid):
            raise UntrustedRecord(f"its process {pid} is not running")
        return
    try:
        status = (PROC / str(pid) / "status").read_text()
    except OSError:
        raise UntrustedRecord(f"its process {pid} is not running") from None
    if _real_uid(status) != os.getuid():
        raise UntrustedRecord(f"its process {pid} is another user's")
    if record.pid_start is None or process_start(pid) != record.pid_start:
        raise UntrustedRecord(f"its process {pid} is not the one recorded (start time differs)")
    command = process_command(pid)
    if command is None or not is_dev_command(command):
        raise UntrustedRecord(f"its process {pid} is not `policyforge dev`")
    if record.command != command:
        raise UntrustedRecord(f"its process {pid} is not the one recorded (command differs)")


def _real_uid(status: str) -> int | None:
    """The real uid on /proc/<pid>/status's "Uid:" line (None: no such line)."""
    for line in status.splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return None


def _pid_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not our dev
    return True


def check_record(path: Path) -> DevRecord:
    """The record at `path` if it is ours and live (see the module docstring); else
    UntrustedRecord naming the check that failed, or FileNotFoundError."""
    record = _parse(_own_file(path))
    _check_local(record)
    _check_process(record)
    return record


def read_record(path: Path, *, quiet: bool = False) -> DevRecord | None:
    """The record at `path` when it is ours and its process runs; else None, with one line on
    stderr saying why a record that is there is not read (unless `quiet`)."""
    try:
        return check_record(path)
    except FileNotFoundError:
        return None
    except (UntrustedRecord, OSError, UnicodeDecodeError) as exc:
        if not quiet:
            reason = exc if isinstance(exc, UntrustedRecord) else f"it cannot be read ({exc})"
            print(f"policyforge: ignoring {path}: {reason}", file=sys.stderr)
        return None


def write_record(record: DevRecord, folder: Path) -> list[Path]:
    """Write `record` into `folder` and the running list (each atomically, 0600 in a 0700
    folder); the files."""
    paths = [folder / RECORD, running_dir() / f"dev-{record.pid}.json"]
    text = json.dumps(asdict(record), indent=2)
    private_folder(default_state_dir())
    for path in paths:
        _write_private(private_folder(path.parent), path.name, text)
    _prune()
    return paths


def _write_private(folder: Path, name: str, text: str) -> None:
    """`text` into folder/name: a new 0600 file (mkstemp: O_CREAT|O_EXCL) renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remove_record(paths: list[Path], pid: int) -> None:
    """Remove the files `write_record` wrote, each only while it is still this process's."""
    for path in paths:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("pid") == pid:
                path.unlink()


def _prune() -> None:
    """Drop the running list's records of processes that are gone (a dev killed outright), and
    any other this list cannot trust: the list is this user's, only dev writes it."""
    for path in _running():
        if read_record(path, quiet=True) is None:
            with contextlib.suppress(OSError):
                path.unlink()


def _running() -> Iterator[Path]:
    with contextlib.suppress(OSError):
        yield from sorted(running_dir().glob("dev-*.json"))


def _loopback(address: str) -> str:
    """host:port with every name of this machine's loopback written the same way."""
    host, _, port = address.strip().rpartition(":")
    host = host.strip("[]").lower()
    return f"{'loopback' if host in LOCAL_HOSTS else host}:{port}"


def find_record(environ: MutableMapping[str, str]) -> DevRecord | None:
    """The live record that fits the settings: the state folder's when no Temporal address is
    configured; else one (the state folder's or a running dev's) serving that address."""
    own = read_record(state_dir(environ) / RECORD)
    _prune()  # a dev killed outright left its copy: not one line about it on every command
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
