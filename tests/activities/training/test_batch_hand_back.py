"""A retried batch hands its evaluator again the checkpoints the killed attempt handed over but
never saw kept, and only those (real S3)."""

from __future__ import annotations

import json
from pathlib import Path

from activities.artifacts import ArtifactStore
from activities.training.batch_activity import HANDED_OVER, _hand_back

PREFIX = "sessions/s/iter_1/c0_default_seed_0/"


async def test_only_checkpoints_handed_over_and_not_kept_are_handed_back(s3, tmp_path: Path):
    store = ArtifactStore()
    for pct, kept in ((25, True), (50, False)):
        folder = f"{PREFIX}evals/pct_{pct}/"
        store.put_bytes(folder + "model.zip", f"policy {pct}".encode())
        store.put_bytes(folder + "vecnormalize.npz", f"stats {pct}".encode())
        marker = {"pct": pct, "fraction": pct / 100, "timesteps": 20 * pct}
        store.put_bytes(folder + HANDED_OVER, json.dumps(marker).encode())
        if kept:
            store.put_bytes(folder + "returns.json", b"{}")
    member = tmp_path / "c0_default_seed_0"

    await _hand_back(store, PREFIX, member)

    assert (member / "evals/pct_50/model.zip").read_bytes() == b"policy 50"
    assert (member / "evals/pct_50/vecnormalize.npz").read_bytes() == b"stats 50"
    assert json.loads((member / "handoff/pct_50.json").read_text())["timesteps"] == 1000
    assert not (member / "evals/pct_25").exists() and not (member / "handoff/pct_25.json").exists()
