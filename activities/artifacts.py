"""Artifacts in S3-compatible storage, always through boto3.

One code path serves the embedded SeaweedFS, MinIO, RustFS and AWS S3: the endpoint comes from
`AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` (unset: AWS itself), credentials from the usual AWS
variables or an instance role, the bucket from `POLICYFORGE_BUCKET`. Presigned links for a
browser are signed for `POLICYFORGE_S3_PUBLIC_URL` when set (the address the browser reaches the
same server at, e.g. the compose S3 as http://localhost:8333 instead of http://s3:8333).
Where things go in the bucket is not decided here: keys come from workflows/contracts/keys.py.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

DEFAULT_BUCKET = "policyforge"


def bucket_name() -> str:
    """The bucket every artifact goes to: POLICYFORGE_BUCKET, else 'policyforge'."""
    return os.environ.get("POLICYFORGE_BUCKET", DEFAULT_BUCKET)


def endpoint_url() -> str | None:
    """The S3 endpoint from the AWS variables; None means AWS itself."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def public_endpoint_url() -> str | None:
    """Where a browser reaches the S3 endpoint, for presigned links; None means the endpoint."""
    return os.environ.get("POLICYFORGE_S3_PUBLIC_URL") or None


# Error codes S3 servers answer a missing bucket with.
_NO_BUCKET = {"404", "NoSuchBucket", "NotFound"}


@lru_cache(maxsize=8)
def _client(endpoint: str | None, attempts: int = 5):
    config = Config(
        # Path-style addressing and "when_required" checksums are what S3-compatible servers
        # (SeaweedFS, MinIO, RustFS) accept; AWS accepts them too.
        s3={"addressing_style": "path"},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        retries={"max_attempts": attempts, "mode": "standard"},
        # A caller that retries by itself (attempts=1) wants a quick answer from each try.
        connect_timeout=5 if attempts == 1 else 60,
    )
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or "us-east-1",
        config=config,
    )


class ObjectTooLarge(ValueError):
    """An object larger than its reader accepts; it was not read. `size` is the length the
    server gave, or limit + 1 when the body held more than its stated length."""

    def __init__(self, key: str, size: int, limit: int) -> None:
        super().__init__(f"{key}: {size:,} bytes, over the limit of {limit:,} bytes")
        self.key = key
        self.size = size
        self.limit = limit


class ArtifactStore:
    """Thin, typed wrapper over one bucket."""

    def __init__(
        self, bucket: str | None = None, endpoint: str | None = None, *, attempts: int = 5
    ) -> None:
        self.bucket = bucket or bucket_name()
        self.endpoint = endpoint if endpoint is not None else endpoint_url()
        # attempts=1: the caller retries with its own budget (the compose bucket job).
        self.client = _client(self.endpoint, attempts)

    def ensure_bucket(self) -> str:
        """Create the bucket unless it exists (embedded and local servers start empty);
        "exists" or "created". Any other error than a missing bucket (a refused key) is raised,
        not answered with a create."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
            return "exists"
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in _NO_BUCKET:
                raise
        try:
            self.client.create_bucket(Bucket=self.bucket)
        except ClientError as exc:  # created meanwhile by another worker
            if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                raise
        return "created"

    def delete(self, key: str) -> None:
        """Remove an object."""
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def put_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> str:
        """Write an object; returns its key, so a call can build and store a key at once."""
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)
        return key

    def put_text(self, key: str, text: str) -> str:
        return self.put_bytes(key, text.encode(), "text/plain; charset=utf-8")

    def put_file(self, key: str, path: Path, content_type: str | None = None) -> str:
        """Upload a local file, its content type guessed from the suffix; returns the key."""
        extra = {"ContentType": content_type or _content_type(path)}
        self.client.upload_file(str(path), self.bucket, key, ExtraArgs=extra)
        return key

    def put_dir(self, prefix: str, root: Path) -> list[str]:
        """Upload every file under `root` to `prefix` + its relative path."""
        keys = []
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            keys.append(self.put_file(prefix + path.relative_to(root).as_posix(), path))
        return keys

    def get_bytes(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def get_text(self, key: str) -> str:
        return self.get_bytes(key).decode()

    def get_bytes_at_most(self, key: str, limit: int) -> bytes:
        """An object's bytes when it holds at most `limit`, else ObjectTooLarge: for objects
        anyone who can write the bucket could plant. The stated length is checked before the
        body is read (one over the limit is closed unread), and the body is read to at most
        limit + 1 bytes, so a wrong length cannot make it read more either."""
        response = self.client.get_object(Bucket=self.bucket, Key=key)
        body = response["Body"]
        try:
            size = int(response.get("ContentLength") or 0)
            if size > limit:
                raise ObjectTooLarge(key, size, limit)
            data = _read_at_most(body, limit + 1)
        finally:
            body.close()
        if len(data) > limit:
            raise ObjectTooLarge(key, len(data), limit)
        return data

    def download(self, key: str, path: Path) -> Path:
        """Download an object to a local path, creating its folder; returns the path."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.client.download_file(self.bucket, key, str(path))
        return path

    def exists(self, key: str) -> bool:
        """Whether an object is there (any error reading its head counts as no)."""
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError:
            return False
        return True

    def size(self, key: str) -> int | None:
        """An object's size in bytes (None: no such object)."""
        try:
            return int(self.client.head_object(Bucket=self.bucket, Key=key)["ContentLength"])
        except ClientError:
            return None

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive) of an object: what a video player asks for."""
        rng = f"bytes={start}-{end}"
        return self.client.get_object(Bucket=self.bucket, Key=key, Range=rng)["Body"].read()

    def list_folders(self, prefix: str) -> list[str]:
        """The folders directly under a prefix (each ending in a slash)."""
        folders: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix, Delimiter="/"
        ):
            folders.extend(p["Prefix"] for p in page.get("CommonPrefixes", []))
        return folders

    def list_keys(self, prefix: str) -> list[str]:
        """Every key under a prefix, across result pages."""
        keys: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        ):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
        return keys

    def presigned_url(self, key: str, expires_s: int = 3600) -> str:
        """A time-limited GET URL, for a browser to fetch an artifact directly.

        Signed for POLICYFORGE_S3_PUBLIC_URL when set: a SigV4 signature covers the host, so the
        link is made by a second client that names the public endpoint (signing needs no
        request; the server checks the signature against the host the browser used).
        """
        public = public_endpoint_url()
        client = _client(public) if public else self.client
        return client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_s
        )


def _read_at_most(stream: Any, most: int) -> bytes:
    """Up to `most` bytes of a stream: a read may answer fewer than asked before the end."""
    chunks: list[bytes] = []
    left = most
    while left > 0 and (chunk := stream.read(left)):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _content_type(path: Path) -> str:
    return {
        ".mp4": "video/mp4",
        ".json": "application/json",
        ".jsonl": "application/x-ndjson",
        ".py": "text/x-python",
        ".zip": "application/zip",
        ".npz": "application/octet-stream",
        ".pkl": "application/octet-stream",
    }.get(path.suffix, "application/octet-stream")
