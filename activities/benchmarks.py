"""A benchmark's result, stored for people and the dashboard: one JSON object in S3 (the
workflow never touches S3 itself)."""

from __future__ import annotations

from activities.artifacts import ArtifactStore
from workflows.contracts.activities import STORE_BENCHMARK, implements
from workflows.contracts.benchmark import BenchmarkStatus
from workflows.contracts.keys import benchmark_result_key


@implements(STORE_BENCHMARK)
def store_benchmark(result: BenchmarkStatus) -> str:
    """Write benchmarks/<id>/result.json; returns its key."""
    key = benchmark_result_key(result.benchmark_id)
    body = result.model_copy(update={"result_key": key}).model_dump_json(indent=1)
    return ArtifactStore().put_bytes(key, body.encode(), "application/json")
