"""Artifacts through boto3 against a real S3 server (SeaweedFS): keys and presigned links."""

from __future__ import annotations

import urllib.request

from activities.artifacts import ArtifactStore


def test_presigned_link_serves_the_video_without_credentials(s3):
    store = ArtifactStore()
    key = store.put_bytes("sessions/p/iter_1/c0_default_seed_0/videos/eval.mp4", b"\x00mp4" * 64)
    link = store.presigned_url(key, expires_s=60)
    assert link.startswith(s3) and "Signature" in link
    with urllib.request.urlopen(link, timeout=10) as response:  # noqa: S310 - loopback only
        assert response.read() == b"\x00mp4" * 64
