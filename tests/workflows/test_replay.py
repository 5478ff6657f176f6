"""Histories recorded by every earlier release replay against the current workflow code: a
change that breaks determinism (and would break the sessions in flight on deploy) fails here.
Record a release's histories with `python -m tests.workflows.record_histories`."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from workflows.session import SessionWorkflow

ROOT = Path(__file__).resolve().parents[2]
HISTORIES = sorted((Path(__file__).parent / "histories").glob("*/*.json"))
# approval, feedback and abort; the first run of a session that continued as new; its second
# run, with the reviser's and the synthesizer's tools.
KINDS = {"approval", "feedback", "aborted", "continued", "tools"}


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_the_previous_release_recorded_every_kind_of_session():
    current = _release(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])
    earlier = sorted(
        (_release(p.parent.name), p.stem) for p in HISTORIES if _release(p.parent.name) < current
    )
    assert earlier, "no histories recorded by an earlier release"
    previous = earlier[-1][0]
    assert {stem for release, stem in earlier if release == previous} == KINDS


@pytest.mark.parametrize("path", HISTORIES, ids=[f"{p.parent.name}/{p.stem}" for p in HISTORIES])
async def test_history_replays_against_the_current_code(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=[SessionWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)
