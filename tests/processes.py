"""The deployment topology without Docker, for the tests that need it: worker pools as separate
OS processes (`python -m workers.pools.<pool>`), connected only by environment variables, and a
training's checkpoint read from its heartbeat (so that a test knows when a kill can resume)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def start_worker(pool: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """One pool's worker process, its output appended to `log`."""
    with log.open("a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", f"workers.pools.{pool}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


def ended_process() -> tuple[int, int]:
    """(pid, start ticks) of a process that has ended: the owner a killed worker's folders
    are named after."""
    from activities.runner.run_dirs import _start_ticks

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    start = _start_ticks(proc.pid)
    assert start is not None
    proc.kill()
    proc.wait()
    return proc.pid, start


def log_records(path: Path) -> list[dict[str, Any]]:
    """A worker's JSON log lines, as dicts (other lines skipped)."""
    out = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


@dataclass
class Pools:
    """The three pools as processes, each logging to `<pool>-worker.log` in `folder`; the
    training pool can be SIGKILLed and replaced (its replacement appends to the same log)."""

    env: dict[str, str]
    folder: Path
    train: subprocess.Popen[bytes] = field(init=False)
    others: list[subprocess.Popen[bytes]] = field(init=False)
    killed: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.others = [start_worker(p, self.env, self.log(p)) for p in ("llm", "judge")]
        self.train = start_worker("train", self.env, self.log("train"))

    def log(self, pool: str) -> Path:
        return self.folder / f"{pool}-worker.log"

    def replace_train(self) -> None:
        """SIGKILL the training worker, as a power loss would, and start another."""
        self.train.send_signal(signal.SIGKILL)
        self.train.wait(10)
        self.killed.append(self.train)
        self.train = start_worker("train", self.env, self.log("train"))

    def terminate(self) -> list[int | None]:
        """SIGTERM every running pool, as compose and systemd stop them; their exit codes."""
        running = [self.train, *self.others]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        return [proc.wait(timeout=60) for proc in running]

    def kill_all(self) -> None:
        for proc in (self.train, *self.others, *self.killed):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@contextmanager
def three_pools(env: dict[str, str], folder: Path) -> Iterator[Pools]:
    """The pools started, and killed on the way out whatever the test did."""
    pools = Pools(env, folder)
    try:
        yield pools
    finally:
        pools.kill_all()


def worker_env(temporal_env: Any, queue_prefix: str, checkpoint_every: int) -> dict[str, str]:
    """The environment the pools' processes get: the server, the queues, one training at a
    time, checkpoints every `checkpoint_every` steps."""
    return {
        **os.environ,
        "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "POLICYFORGE_QUEUE_PREFIX": queue_prefix,
        "POLICYFORGE_TRAIN_CONCURRENCY": "1",
        "POLICYFORGE_CHECKPOINT_EVERY": str(checkpoint_every),
    }


async def heartbeat_until(
    handle: Any, activity: str, pick: Callable[[dict[str, Any]], Any], timeout: float = 120
) -> Any:
    """What `pick` finds in the heartbeat details of the session's running `activity`, as soon
    as it finds something (not None)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        desc = await handle.describe()
        for pending in desc.raw_description.pending_activities:
            if pending.activity_type.name == activity and pending.heartbeat_details.payloads:
                found = pick(json.loads(pending.heartbeat_details.payloads[0].data))
                if found is not None:
                    return found
        await asyncio.sleep(0.5)
    raise AssertionError(f"no {activity} heartbeat named what the test waits for")


async def checkpoint_in_heartbeat(handle: Any, timeout: float = 120) -> dict[str, Any]:
    """The heartbeat details of the running train_policy once they name a checkpoint."""
    details: dict[str, Any] = await heartbeat_until(
        handle, "train_policy", lambda d: d if d.get("checkpoint_key") else None, timeout
    )
    return details


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def descendants(pid: int) -> set[int]:
    """Every process below `pid` now (its children, theirs, ...): what a kill of `pid` must
    take with it. Read before the kill; afterwards orphans have a new parent."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        stat = _stat(int(entry.name))
        if stat is not None:
            parents[int(entry.name)] = stat[0]
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def still_running(pids: set[int]) -> list[int]:
    """The ones of `pids` that still run (a zombie has ended; only its reaping is left)."""
    return sorted(p for p in pids if (stat := _stat(p)) is not None and stat[1] != "Z")
