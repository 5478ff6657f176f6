"""Fixtures of the tests that read and write dev's record (test_dev_record*.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workers.fake_dev import fake_dev


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own: the default state folder and the running list live under it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def dev_pid(tmp_path: Path) -> Iterator[int]:
    """A live stand-in for `policyforge dev`: a record is read only when it names dev."""
    with fake_dev(tmp_path) as proc:
        yield proc.pid
