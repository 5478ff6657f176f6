"""One-shot job (the policyforge image): the artifacts bucket, created if missing, then checked.

Idempotent: safe on every `docker compose up`, and against AWS S3 or any S3-compatible server.
It talks to S3 the way the workers do (boto3, path-style addressing, checksums only when
required) with the workers' settings: AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION, POLICYFORGE_BUCKET. The check writes, reads back and deletes
one object, so a bucket the workers cannot use fails here rather than in the first session.

Retried SETUP_ATTEMPTS times, SETUP_RETRY_DELAY_S seconds apart (the server may still be
starting); on failure it exits 1 with one line saying which step failed and why.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

from botocore.exceptions import BotoCoreError, ClientError

from activities.artifacts import ArtifactStore, bucket_name, endpoint_url


def _error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"{err.get('Code', '?')}: {err.get('Message') or exc}"
    return " ".join(str(exc).split())


def check_bucket(store: ArtifactStore) -> None:
    """Write, read back and delete one object: what the workers will do."""
    key = f".policyforge-init/{uuid.uuid4().hex}"
    body = b"policyforge bucket check"
    store.put_bytes(key, body)
    try:
        got = store.get_bytes(key)
        if got != body:
            raise RuntimeError(f"read back {len(got)} bytes, wrote {len(body)}")
    finally:
        store.delete(key)


class SetupFailed(Exception):
    """A step still failed on its last attempt; the message is the job's one-line reason."""


def retry(step: str, run, attempts: int, delay: float):
    """run() until it returns, at most `attempts` times; SetupFailed after the last failure."""
    for attempt in range(1, attempts + 1):
        try:
            return run()
        except (BotoCoreError, ClientError, RuntimeError, OSError) as exc:
            if attempt == attempts:
                raise SetupFailed(
                    f"{step} failed after {attempt} attempts: {_error(exc)}"
                ) from None
            time.sleep(delay)


def main() -> int:
    """Create and check the bucket; 0 when it is usable, 1 with a one-line reason when not."""
    bucket, endpoint = bucket_name(), endpoint_url()
    where = endpoint or "AWS S3"
    try:
        attempts = max(1, int(os.environ.get("SETUP_ATTEMPTS") or 30))
        delay = float(os.environ.get("SETUP_RETRY_DELAY_S") or 2)
        # One try per attempt: the loop in retry() does the retrying, with its own budget.
        store = ArtifactStore(bucket, endpoint, attempts=1)
        done = retry(
            f"creating bucket {bucket!r} at {where}",
            store.ensure_bucket,
            attempts,
            delay,
        )
        print(f"s3-init: bucket {bucket!r} {done} at {where}", flush=True)
        retry(
            f"checking bucket {bucket!r} at {where}",
            lambda: check_bucket(store),
            attempts,
            delay,
        )
    except (SetupFailed, ValueError) as exc:
        print(f"s3-init: {exc}", file=sys.stderr)
        return 1
    print(f"s3-init: bucket {bucket!r} ready at {where} (write, read back, delete: ok)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
