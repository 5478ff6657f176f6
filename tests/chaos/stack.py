"""A local stack of its own: Temporal dev server (SQLite state, so it can be killed and
restarted), SeaweedFS, the fake LLM server and the three worker pools as OS processes.

Its S3 secret and its provider key are made up and distinctive, so that the secret scan can
look for them anywhere. Workers run as `python -m workers.pools.<pool>` (tests/processes.py),
writing their logs under the stack's folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import boto3
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.artifacts import ArtifactStore
from tests.chaos.llm_script import ChaosScript
from tests.fakes.llm_server import FakeLLMServer
from tests.processes import descendants, start_worker
from workers.dev.services import Service, free_port, port_in_use, start_seaweedfs, start_temporal

BUCKET = "policyforge-chaos"
PROVIDER_KEY = "sk-ant-test-SECRET123"
LLM_MODEL = "claude-sonnet-4-6"
LLM_TIMEOUT_S = 3.0  # the fake server's "slow" fault answers after twice this
CHECKPOINT_EVERY = 2048
POOLS = ("llm", "train", "judge")


def _kill_group(service: Service) -> None:
    """SIGKILL a service's process group (no graceful shutdown) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(service.process.pid, signal.SIGKILL)
    service.process.wait(10)


@dataclass
class Stack:
    """Servers and worker processes that scenarios run sessions on, and fault by hand."""

    root: Path
    queue_prefix: str = field(default_factory=lambda: f"chaos-{secrets.token_hex(4)}")
    s3_secret: str = field(default_factory=lambda: f"pf-chaos-s3-{secrets.token_hex(8)}")
    train_concurrency: int = 2
    temporal: Service | None = None
    s3: Service | None = None
    llm: FakeLLMServer | None = None
    temporal_port: int = field(default_factory=free_port)
    s3_port: int = field(default_factory=free_port)
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    client: Client | None = None

    @property
    def address(self) -> str:
        """Where Temporal answers."""
        return f"127.0.0.1:{self.temporal_port}"

    @property
    def logs(self) -> Path:
        """The folder the workers' logs are written to."""
        return self.root / "logs"

    @property
    def s3_endpoint(self) -> str:
        """Where SeaweedFS answers S3."""
        return f"http://127.0.0.1:{self.s3_port}"

    def env(self) -> dict[str, str]:
        """The environment the workers run with (this process's own is left alone, so that
        two stacks can run side by side)."""
        assert self.llm is not None
        return {
            "TEMPORAL_ADDRESS": self.address,
            "AWS_ENDPOINT_URL_S3": self.s3_endpoint,
            "POLICYFORGE_BUCKET": BUCKET,
            "AWS_ACCESS_KEY_ID": "policyforge-chaos",
            "AWS_SECRET_ACCESS_KEY": self.s3_secret,
            "POLICYFORGE_QUEUE_PREFIX": self.queue_prefix,
            "POLICYFORGE_TRAIN_CONCURRENCY": str(self.train_concurrency),
            "POLICYFORGE_CHECKPOINT_EVERY": str(CHECKPOINT_EVERY),
            "POLICYFORGE_LOG_LEVEL": "info",
            "POLICYFORGE_LLM_TIMEOUT_S": str(LLM_TIMEOUT_S),
            "ANTHROPIC_API_KEY": PROVIDER_KEY,
            "ANTHROPIC_BASE_URL": self.llm.base_url("anthropic"),
            "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
        }

    def store(self) -> ArtifactStore:
        """The stack's bucket, with the stack's credentials."""
        store = ArtifactStore(bucket=BUCKET, endpoint=self.s3_endpoint)
        store.client = boto3.client(
            "s3",
            endpoint_url=self.s3_endpoint,
            aws_access_key_id="policyforge-chaos",
            aws_secret_access_key=self.s3_secret,
            region_name="us-east-1",
            config=store.client.meta.config,
        )
        return store

    # servers

    def start_temporal(self) -> None:
        """Start (or restart, on the same port and SQLite file) the Temporal dev server."""
        self.temporal = start_temporal(self.root / "temporal", self.temporal_port, None)

    def kill_temporal(self) -> None:
        """SIGKILL the Temporal dev server."""
        assert self.temporal is not None
        _kill_group(self.temporal)

    def start_s3(self) -> None:
        """Start (or restart, on the same port and data folder) SeaweedFS, and wait for it."""
        # The stack's own keys, whatever AWS_* this process has (the test suite sets others).
        self.s3 = start_seaweedfs(
            self.root / "s3", self.s3_port, BUCKET, ("policyforge-chaos", self.s3_secret)
        )
        deadline = time.monotonic() + 60
        while True:  # the S3 port opens before the filer is ready
            try:
                store = self.store()
                store.ensure_bucket()
                store.put_bytes(".policyforge-ready", b"ok")
                return
            except Exception:
                if time.monotonic() > deadline or self.s3.process.poll() is not None:
                    raise self.s3.fail("did not serve its bucket") from None
                time.sleep(0.3)

    def kill_s3(self) -> None:
        """SIGKILL SeaweedFS."""
        assert self.s3 is not None
        _kill_group(self.s3)

    # workers

    def start_worker(self, pool: str) -> subprocess.Popen[bytes]:
        """Start one pool's worker process (replacing the handle of a previous one)."""
        proc = start_worker(pool, {**os.environ, **self.env()}, self.logs / f"{pool}-worker.log")
        self.workers[pool] = proc
        return proc

    def kill_worker(self, pool: str) -> set[int]:
        """SIGKILL one pool's worker process; the processes it had below it then (its runner
        template and children), which must die with it."""
        proc = self.workers[pool]
        family = descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        return family

    def log_lines(self) -> list[str]:
        """Every line the worker processes printed so far."""
        lines: list[str] = []
        for path in sorted(self.logs.glob("*.log")):
            lines += path.read_text(errors="replace").splitlines()
        return lines

    def server_log_lines(self) -> list[str]:
        """Every line the Temporal dev server and SeaweedFS wrote so far."""
        paths = [self.root / "temporal" / "temporal.log", self.root / "s3" / "seaweedfs.log"]
        lines: list[str] = []
        for path in paths:
            if path.exists():
                lines += path.read_text(errors="replace").splitlines()
        return lines

    async def connect(self) -> Client:
        """A client with the workflows' data converter (kept on the stack)."""
        self.client = await Client.connect(self.address, data_converter=pydantic_data_converter)
        return self.client

    def stop(self) -> None:
        """Stop workers, servers and the fake LLM server."""
        for proc in self.workers.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.workers.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for service in (self.s3, self.temporal):
            if service is not None:
                service.stop()
        if self.llm is not None:
            self.llm.close()


@contextlib.asynccontextmanager
async def running_stack(root: Path, train_concurrency: int = 2) -> AsyncIterator[Stack]:
    """A started stack (servers, fake LLM server, three workers, a client), stopped when the
    block ends."""
    stack = Stack(root=root, train_concurrency=train_concurrency)
    stack.logs.mkdir(parents=True, exist_ok=True)
    try:
        stack.llm = FakeLLMServer().start()
        stack.llm.responder = ChaosScript()
        await asyncio.to_thread(stack.start_temporal)
        # The port picked at construction may have been taken since (Temporal's own servers
        # bind ports as they start, and so do other tests'): the first start takes a free
        # one; restarts keep whichever it got.
        if port_in_use(stack.s3_port):
            stack.s3_port = free_port()
        await asyncio.to_thread(stack.start_s3)
        for pool in POOLS:
            stack.start_worker(pool)
        await stack.connect()
        yield stack
    finally:
        await asyncio.to_thread(stack.stop)
