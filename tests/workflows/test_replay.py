"""Recorded session histories replay against the current workflow code: a change that breaks
determinism (and would break every running session on deploy) fails here.
Re-record deliberately with `python -m tests.workflows.record_histories`."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from workflows.session import SessionWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_every_kind_of_session_is_recorded():
    # approval, feedback and abort; the first run of a session that continued as new; its
    # second run, with the reviser's and the synthesizer's tools.
    kinds = {"approval", "feedback", "aborted", "continued", "tools"}
    assert {p.stem for p in HISTORIES} == kinds


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays_against_the_current_code(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=[SessionWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)
