"""What the dashboard reads of benchmarks: the runs (visibility list), one run's table (its
result JSON in S3 once done, its `status` query while it runs) and two runs side by side.

Results are read as the JSON the workflow writes (workflows/contracts/benchmark.py), so a page
shows a finished benchmark even with no worker running.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import structlog
from botocore.exceptions import ClientError
from temporalio.client import Client, WorkflowExecutionStatus

from activities.artifacts import ArtifactStore, ObjectTooLarge
from workflows.contracts import keys

GROUPS = ("by_category", "by_difficulty", "by_env")
# The most read of a stored result: anyone who can write the bucket could plant a huge one.
# A result holds at most 500 cases (MAX_CASES) of a few KB each, so a few MiB at most.
RESULT_LIMIT = 16 << 20


async def list_benchmarks(client: Client, limit: int = 100) -> list[dict[str, Any]]:
    """The benchmark runs, newest first."""
    query = "WorkflowType = 'BenchmarkWorkflow'"
    rows = [
        {
            "id": e.id,
            "state": e.status.name.capitalize() if e.status else "Unknown",
            "started": e.start_time.isoformat(timespec="seconds"),
            "closed": e.close_time.isoformat(timespec="seconds") if e.close_time else None,
        }
        async for e in client.list_workflows(query, limit=limit)
    ]
    return sorted(rows, key=lambda r: r["started"], reverse=True)


async def read(client: Client, store: ArtifactStore, benchmark_id: str) -> dict[str, Any] | None:
    """A benchmark's aggregate: the stored result when it has one, else its live status;
    None when there is no such benchmark. `state` is the workflow's state."""
    from temporalio.service import RPCError

    handle = client.get_workflow_handle(benchmark_id)
    try:
        described = await handle.describe(rpc_timeout=timedelta(seconds=5))
    except RPCError:
        described = None
    if described is not None and described.workflow_type != "BenchmarkWorkflow":
        return None
    state = described.status.name.capitalize() if described and described.status else "Unknown"
    running = described is not None and described.status == WorkflowExecutionStatus.RUNNING
    data = None if running else await asyncio.to_thread(_stored, store, benchmark_id)
    if data is None and described is not None:
        try:
            status = await handle.query("status", rpc_timeout=timedelta(seconds=5))
            data = (
                status
                if isinstance(status, dict)
                else json.loads(json.dumps(status, default=_plain))
            )
        except Exception:  # noqa: BLE001 - no worker answers: nothing live to show
            data = None
    if data is None:
        return (
            None
            if described is None
            else {"benchmark_id": benchmark_id, "cases": [], "state": state}
        )
    data["state"] = state
    return data


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump else str(value)


def _stored(store: ArtifactStore, benchmark_id: str) -> dict[str, Any] | None:
    """The stored result; None when absent, over RESULT_LIMIT (not read), or not a JSON
    object: the page then shows the live status, or nothing."""
    key = keys.benchmark_result_key(benchmark_id)
    try:
        data = json.loads(store.get_bytes_at_most(key, RESULT_LIMIT))
    except ObjectTooLarge as exc:
        structlog.get_logger().warning(
            "dashboard: a benchmark result is too large to read", key=key, size=exc.size
        )
        return None
    except (ClientError, ValueError, RecursionError):  # not UTF-8, not JSON, or too deep
        return None
    return data if isinstance(data, dict) else None


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of two runs side by side: overall, then every group either has, with both sides'
    stats (None where a side lacks the group)."""
    rows = [{"group": "overall", "name": "all cases", "a": a.get("overall"), "b": b.get("overall")}]
    for group in GROUPS:
        names = sorted(set(a.get(group) or {}) | set(b.get(group) or {}))
        for name in names:
            rows.append(
                {
                    "group": group.removeprefix("by_"),
                    "name": name,
                    "a": (a.get(group) or {}).get(name),
                    "b": (b.get(group) or {}).get(name),
                }
            )
    return rows
