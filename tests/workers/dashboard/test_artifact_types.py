"""An object planted in the bucket is never served as a page or a script: artifacts get their
Content-Type from an allow-list (video, images, JSON, text), anything else is a download, and
every one says nosniff and runs nothing (real SeaweedFS)."""

from __future__ import annotations

from activities.artifacts import ArtifactStore
from tests.workers.dashboard.client import Http

FOLDER = "sessions/planted/iter_1/"
SCRIPT = b"<script>fetch('/api/sessions').then(r => r.text()).then(alert)</script>"
PLANTED = {
    "x.html": (SCRIPT, "text/html"),
    "x.htm": (SCRIPT, "text/html"),
    "x.js": (b"alert(document.cookie)", "text/javascript"),
    "x.mjs": (b"alert(document.cookie)", "text/javascript"),
    "x.svg": (
        b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
        "image/svg+xml",
    ),
    "x.xml": (b'<x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>', "text/xml"),
    "noname": (SCRIPT, "text/html"),
}
ACTIVE = ("html", "javascript", "svg", "xml")
KEPT = {
    "run/videos/eval.mp4": "video/mp4",
    "run/judgment.json": "application/json",
    "reward.py": "text/plain; charset=utf-8",
}


def _inert(headers: dict[str, str]) -> None:
    lower = {k.lower(): v for k, v in headers.items()}
    assert lower["x-content-type-options"] == "nosniff"
    assert "default-src 'none'" in lower["content-security-policy"]
    assert not any(kind in lower["content-type"] for kind in ACTIVE), lower["content-type"]


async def test_planted_pages_scripts_and_svgs_are_downloads(open_dashboard):
    store = ArtifactStore()
    for name, (data, content_type) in PLANTED.items():
        store.put_bytes(FOLDER + name, data, content_type)
    http = Http(open_dashboard)
    for name in PLANTED:
        for headers in ({}, {"Range": "bytes=0-9"}):
            status, answer, _ = await http.get(f"/artifacts/planted/iter_1/{name}", **headers)
            assert status in (200, 206), (name, status)
            _inert(answer)
            assert answer["content-type"] == "application/octet-stream", name
            assert answer["content-disposition"] == "attachment", name


async def test_videos_json_and_code_keep_their_types(open_dashboard):
    store = ArtifactStore()
    for name in KEPT:
        store.put_bytes(FOLDER + name, b'{"x": 1}', "text/html")  # the bucket's type is ignored
    http = Http(open_dashboard)
    for name, content_type in KEPT.items():
        status, answer, _ = await http.get(f"/artifacts/planted/iter_1/{name}")
        assert status == 200 and answer["content-type"] == content_type, (name, answer)
        assert "content-disposition" not in {k.lower() for k in answer}
        _inert(answer)
