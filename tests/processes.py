"""The deployment topology without Docker, for the tests that need it: worker pools as separate
OS processes (`python -m workers.<pool>`), connected only by environment variables, and a
training's checkpoint read from its heartbeat (so that a test knows when a kill can resume)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def start_worker(pool: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """One pool's worker process, its output appended to `log`."""
    with log.open("a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", f"workers.{pool}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


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


def orphans(marker: str) -> list[str]:
    """Command lines of running processes that carry `marker` (a runner child's title)."""
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if marker in line]
