"""`policyforge sessions` fits the terminal (issue 43 point 5): at 80 columns every line fits and
each session id is whole on one line, never cut or folded (a person copies it into `policyforge
status ID`); the prompt is shortened first, then columns after the id are left out; links are
whole URLs. Against the real Temporal dev server, and the layout itself without one."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console
from temporalio.client import Client, WorkflowHandle
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from workers.cli.session_list import fitted_widths, link_lines, print_sessions
from workflows import search

LONG_PROMPT = (
    "run forward as fast as possible while keeping the torso level, never flipping over, "
    "and stop with both feet on the ground at the end of the episode"
)
WIDE_PROMPT = "向前跑得尽可能快，保持躯干水平，不要翻倒，并在回合结束时双脚着地站稳"


def cli_env(client: Client, home: Path, columns: int) -> dict[str, str]:
    """The test server, nothing else of Temporal, S3 or policyforge set, a home of its own (no
    profile, no dev record) and the terminal width."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "AWS_", "POLICYFORGE_")) and k != "COLUMNS"
    }
    return {
        **env,
        "HOME": str(home),
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "COLUMNS": str(columns),
    }


async def _start(client: Client, sid: str, prompt: str, stage: str, env_id: str) -> WorkflowHandle:
    """A SessionWorkflow nothing runs (a queue no worker polls): it stays Running, listed first,
    with the search attributes and memo a session has."""
    attributes = TypedSearchAttributes(
        [
            SearchAttributePair(search.STAGE, stage),
            SearchAttributePair(search.ENV, env_id),
            SearchAttributePair(search.ITERATION, 2),
            SearchAttributePair(search.BEST_SCORE, 0.87),
            SearchAttributePair(search.PASSED, False),
        ]
    )
    return await client.start_workflow(
        "SessionWorkflow",
        id=sid,
        task_queue=f"nobody-{uuid.uuid4().hex[:8]}",
        memo={"prompt": prompt},
        search_attributes=attributes,
    )


@pytest.fixture
async def listed(temporal_env) -> AsyncIterator[list[str]]:
    """Three sessions with long prompts and stages, the newest Running ones: ids of 29 (a Web UI
    link of exactly 80 characters), 18 and 12 characters."""
    client = temporal_env.client
    tag = uuid.uuid4().hex[:8]
    specs = [
        (f"fit-{tag}-run-forward-fast", LONG_PROMPT, "awaiting_approval", "HalfCheetah-v5"),
        (f"fit-{tag}-wide-cn", WIDE_PROMPT, "training", "InvertedDoublePendulum-v5"),
        (f"fit-{tag}-x", LONG_PROMPT, "eliciting", "Ant-v5"),
    ]
    handles = [await _start(client, *spec) for spec in specs]
    ids = [h.id for h in handles]
    try:
        for _ in range(100):  # until the visibility store has them
            query = f"WorkflowType = 'SessionWorkflow' AND WorkflowId STARTS_WITH 'fit-{tag}-'"
            if len([e async for e in client.list_workflows(query)]) == len(ids):
                break
            await asyncio.sleep(0.1)
        yield ids
    finally:
        await asyncio.gather(*(h.terminate() for h in handles))


async def _sessions(client: Client, home: Path, columns: int, *args: str) -> str:
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "workers.cli", "sessions", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(client, home, columns),
        cwd=home,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_sessions_fits_80_columns_with_every_id_whole(temporal_env, listed, tmp_path):
    out = await _sessions(temporal_env.client, tmp_path, 80, "--limit", str(len(listed)))
    lines = out.splitlines()
    for line in lines:
        assert cell_len(line) <= 80, (cell_len(line), line)
    rows = [line for line in lines if line.startswith("fit-")]
    assert len(rows) == len(listed), out  # one line per session, nothing folded onto another
    for sid, row in zip(listed[::-1], rows, strict=True):  # newest first
        assert row.split()[0] == sid, row  # first, whole
    # The table kept the stage and the verdict, shortened the prompt, and left out what did
    # not fit; the links are whole, each on a line of its own.
    assert "awaiting_approval" in out and "no 0.87" in out and "..." in out
    for sid in listed:
        assert any(line.endswith(f"/sessions/{sid}") for line in lines)
        assert any(line.endswith(f"/namespaces/default/workflows/{sid}") for line in lines)
    ui = [line for line in lines if line.endswith(f"/workflows/{listed[0]}")]
    assert len(ui) == 1 and len(ui[0]) == 80


async def test_wider_terminals_show_more_of_each_session(temporal_env, listed, tmp_path):
    out = await _sessions(temporal_env.client, tmp_path, 250, "--limit", str(len(listed)))
    lines = out.splitlines()
    assert all(cell_len(line) <= 250 for line in lines)
    assert "InvertedDoublePendulum-v5" in out and LONG_PROMPT[:57] + "..." in out
    # Links beside their id, one line per session.
    for sid in listed:
        [line] = [line for line in lines if line.startswith(f"{sid}  http")]
        assert line.endswith(f"/namespaces/default/workflows/{sid}")


def _row(sid: str, prompt: str | None = LONG_PROMPT, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": sid,
        "stage": "awaiting_approval",
        "workflow_status": "Terminated",
        "iteration": 12,
        "best_score": 0.5,
        "passed": False,
        "env_id": "InvertedDoublePendulum-v5",
        "prompt": prompt,
        "dashboard_url": f"http://localhost:8234/sessions/{sid}",
        "ui_url": f"http://localhost:8233/namespaces/default/workflows/{sid}",
        **fields,
    }


def _printed(rows: list[dict[str, Any]], width: int) -> list[str]:
    out = io.StringIO()
    print_sessions(Console(file=out, width=width, soft_wrap=True), rows)
    return out.getvalue().splitlines()


# The longest id `policyforge run` makes: pf-, a 32-character slug, -, 8 hex digits.
LONGEST_ID = "pf-" + "run-forward-and-keep-the-torso-up"[:32] + "-1a2b3c4d"


@pytest.mark.parametrize("width", [20, 40, 60, 80, 100, 120, 200, 250])
def test_the_table_fits_and_never_cuts_an_id(width: int):
    ids = [LONGEST_ID, "b-1", "bench-41-easy-7"]
    rows = [_row(ids[0]), _row(ids[1], WIDE_PROMPT), _row(ids[2], None, best_score=None)]
    lines = _printed(rows, width)
    table, links = lines[: len(rows) + 1], lines[len(rows) + 1 :]
    assert table[0].startswith("session")
    for sid, line in zip(ids, table[1:], strict=True):
        assert line.split()[0] == sid
        # Only an id wider than the terminal makes a line wider than it: it is never cut.
        assert cell_len(line) <= max(width, len(LONGEST_ID))
    # Every link whole; a line of its own unless id and both links fit in one.
    words = {word for line in links for word in line.split()}
    for row in rows:
        assert row["dashboard_url"] in words and row["ui_url"] in words
    assert len(links) == (len(ids) if width >= 250 else 2 * len(ids))


def test_the_prompt_is_shortened_then_columns_are_left_out():
    natural = {"session": 15, "stage": 17, "iter": 4, "passed": 8, "env": 19, "prompt": 60}
    assert fitted_widths(natural, 200) == natural
    # Shortened where that is enough; else the env goes first, the prompt taking its room.
    assert fitted_widths(natural, 120) == {**natural, "prompt": 120 - (15 + 17 + 4 + 8 + 19 + 10)}
    assert fitted_widths(natural, 80) == {
        "session": 15,
        "stage": 17,
        "iter": 4,
        "passed": 8,
        "prompt": 80 - (15 + 17 + 4 + 8 + 8),
    }
    assert fitted_widths(natural, 60) == {"session": 15, "stage": 17, "passed": 8, "prompt": 14}
    assert list(fitted_widths(natural, 50)) == ["session", "stage", "passed"]
    assert list(fitted_widths(natural, 40)) == ["session", "stage"]
    assert list(fitted_widths(natural, 30)) == ["session"]
    assert fitted_widths({**natural, "session": 100}, 80) == {"session": 100}


def test_links_beside_their_id_only_where_the_line_fits():
    rows = [_row("a-1"), _row("b-2")]
    wide = link_lines(rows, 200)
    assert wide == [f"{r['session_id']}  {r['dashboard_url']}  {r['ui_url']}" for r in rows]
    assert link_lines(rows, 80) == [url for r in rows for url in (r["dashboard_url"], r["ui_url"])]
    assert _printed([], 80) == ["no sessions yet"]
