"""Generated text on the dashboard is shown, never obeyed: a session planted with an escape
sequence (\\x1b[2J), a right-to-left override (\\u202e) and Plotly markup in its term names,
criteria, diagnoses, verdicts and reward code reads back escaped in every page and answer a
person reads, and the chart shows a term named like a link as text (real Chromium)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from html import unescape
from typing import Any

import pytest
from temporalio import workflow
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.artifacts import ArtifactStore
from tests.workers.dashboard.browser import chromium_page
from tests.workers.dashboard.client import Http
from workers.dashboard.app import artifact_url
from workers.dashboard.server import serving
from workers.dev.services import free_port
from workers.settings import Settings
from workflows.contracts import keys
from workflows.contracts.judging import Criterion
from workflows.contracts.session import IterationRecord, RunRecord, SessionStatus

CLEAR = "\x1b[2J"  # a terminal clears its screen
RLO = "\u202e"  # what follows displays right to left: "DEVORPPA" reads "APPROVED"
HOSTILE = f"{CLEAR}{RLO}DEVORPPA"
SHOWN = "\\x1b[2J\\u202eDEVORPPA"  # what a person must read instead
LINK = '<a href="https://example.com">x</a>'
LONG = "W" * 6000  # one word: it stretched the session page to 83,000 px


@workflow.defn(name="SessionWorkflow")
class PlantedSession:
    """Stands in for a session: answers `status` with what the test planted."""

    def __init__(self) -> None:
        self._status: SessionStatus | None = None

    @workflow.run
    async def run(self, status: SessionStatus) -> None:
        self._status = status
        await workflow.wait_condition(lambda: False)

    @workflow.query
    def status(self) -> SessionStatus | None:
        return self._status


def _plant(store: ArtifactStore, sid: str) -> SessionStatus:
    run = keys.run_prefix(sid, 1, "c0_default_seed_0")
    reward = keys.reward_key(sid, 1)
    store.put_text(reward, f"def reward():\n    return 1.0  # {HOSTILE}\n")
    rows = [
        {"timesteps": t, "ep_return_mean": r, f"term_{LINK}": r / 10, f"term_{HOSTILE}": -r}
        for t, r in ((2048, 1.0), (4096, 2.0), (6144, 3.0))
    ]
    store.put_text(run + keys.SCALARS, "\n".join(json.dumps(r) for r in rows) + "\n")
    criterion = {"name": f"speed {HOSTILE}", "metric": "x", "value": 1.0, "target": 2.0}
    judgment = {
        "score": 0.5,
        "passed": False,
        "diagnosis": f"judge {HOSTILE}",
        "criteria": [{**criterion, "direction": "at_least", "score": 0.5, "unit": "m/s"}],
    }
    store.put_text(run + keys.JUDGMENT, json.dumps(judgment))
    verdict = {"name": f"gait {HOSTILE}", "verdict": "met", "score": 1.0, "reason": HOSTILE + LONG}
    store.put_text(
        run + keys.VISUAL_JUDGMENT,
        json.dumps({"score": 1.0, "verdicts": [verdict], "shown": "video"}),
    )
    best = RunRecord(
        run_name="c0_default_seed_0",
        seed=0,
        run_prefix=run,
        model_key=run + keys.MODEL,
        vecnormalize_key=run + keys.VECNORMALIZE,
        video_key=None,
        trajectory_key=run + keys.TRAJECTORY,
        timesteps_done=6144,
        score=0.5,
        passed=False,
    )
    record = IterationRecord(
        iteration=1,
        reward_key=reward,
        reward_summary=f"summary {HOSTILE} {LONG}",
        latex=r"r = \text{" + HOSTILE + "}",
        timesteps=6144,
        score=0.5,
        passed=False,
        diagnosis=f"diagnosis {HOSTILE}",
        failure_tags=[HOSTILE],
        best_run=best,
        changes=HOSTILE + LONG,
    )
    return SessionStatus(
        session_id=sid,
        prompt=f"run {HOSTILE}",
        env_id="HalfCheetah-v5",
        model_label="offline",
        stage="revising",
        iteration=1,
        max_iterations=2,
        timesteps_done=0,
        timesteps_target=6144,
        best_score=0.5,
        best_iteration=1,
        iterations=[record],
        criteria=[Criterion(name=f"speed {HOSTILE}", description=HOSTILE, target=2.0)],
        note=HOSTILE,
    )


@pytest.fixture(scope="module")
async def planted(temporal_env, s3) -> AsyncIterator[tuple[str, str]]:
    """(dashboard URL, session id) of a running stand-in session with hostile text."""
    client = temporal_env.client
    sid = f"pf-hostile-{uuid.uuid4().hex[:8]}"
    queue = f"dashboard-planted-{uuid.uuid4().hex[:6]}"
    status = _plant(ArtifactStore(), sid)
    settings = replace(
        Settings(), dashboard_host="127.0.0.1", dashboard_port=free_port(), dashboard_token=None
    )
    async with Worker(
        client,
        task_queue=queue,
        workflows=[PlantedSession],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        # The prompt in the memo, as the CLI sets it: the list does not ask the stand-in.
        handle = await client.start_workflow(
            PlantedSession.run, status, id=sid, task_queue=queue, memo={"prompt": status.prompt}
        )
        for _ in range(100):
            if await handle.query(PlantedSession.status) is not None:
                break
            await asyncio.sleep(0.1)
        try:
            async with serving(client, settings):
                yield f"http://127.0.0.1:{settings.dashboard_port}", sid
        finally:
            await handle.terminate()


def _no_raw_controls(text: str, where: str) -> None:
    for raw in ("\x1b", RLO):
        assert raw not in text, f"{where} holds {raw!r} raw"


def _chart_series(html: str) -> list[dict[str, Any]]:
    return [json.loads(unescape(s)) for s in re.findall(r"data-series='([^']*)'", html)]


async def test_planted_controls_read_back_escaped_in_pages_and_answers(planted):
    base, sid = planted
    http = Http(base)
    status, _, body = await http.get(f"/sessions/{sid}")
    assert status == 200
    page = body.decode()
    _no_raw_controls(page, "the session page")
    for seen in (
        f"speed {SHOWN}",  # a criterion's name, in the header and in the code judge's table
        f"diagnosis {SHOWN}",  # the iteration's diagnosis
        f"judge {SHOWN}",  # the code judge's diagnosis
        f"gait {SHOWN}",  # the video judge's verdict and its reason
        f"# {SHOWN}",  # a comment in the reward's code
    ):
        assert seen in page, seen
    assert page.count(SHOWN) >= 10
    # The charts' data: term names as text, escapes visible, for Plotly to draw as given.
    terms = next(s for s in _chart_series(page) if any(k.startswith("term_") for k in s))
    assert f"term_{SHOWN}" in terms and f"term_{LINK}" in terms

    for path in (f"/api/sessions/{sid}/parts", f"/api/sessions/{sid}", "/api/sessions"):
        status, _, body = await http.get(path)
        assert status == 200, path
        _no_raw_controls(body.decode(), path)
    # The reward's code as a link to it opens it.
    status, _, body = await http.get(artifact_url(sid, keys.reward_key(sid, 1)))
    assert status == 200 and f"# {SHOWN}".encode() in body
    _no_raw_controls(body.decode(), "the reward's code")

    status, _, body = await http.get(f"/api/sessions/{sid}/parts")
    parts = json.loads(body)["parts"]
    assert f"diagnosis {SHOWN}" in parts["iter-1"] and f"speed {SHOWN}" in parts["header"]
    status, _, body = await http.get("/api/sessions")
    row = next(r for r in json.loads(body)["sessions"] if r["session_id"] == sid)
    assert row["prompt"] == f"run {SHOWN}"


async def test_a_term_named_like_a_link_is_text_on_the_chart(planted):
    base, sid = planted
    async with chromium_page() as (tab, errors):
        await tab.goto(f"{base}/sessions/{sid}")
        await tab.wait_for_selector(".chart[data-drawn] .legendtext", timeout=20_000)
        links = await tab.locator(".chart a").count()
        legends = await tab.locator(".chart .legendtext").all_text_contents()
        titles = await tab.locator(".chart .gtitle").all_text_contents()
        # The page's own escaping, for text that reaches it without the server's.
        escaped = await tab.evaluate("text => plotlyText(text)", f"{LINK}{HOSTILE}")
    assert errors == []
    assert links == 0, "Plotly made a link of a term's name"
    assert LINK in legends and SHOWN in legends, legends
    assert "Reward terms (mean per step)" in titles
    assert escaped == '&lt;a href="https://example.com"&gt;x&lt;/a&gt;' + SHOWN


async def test_a_6000_character_word_wraps_on_the_session_page(planted):
    base, sid = planted
    async with chromium_page() as (tab, errors):
        await tab.goto(f"{base}/sessions/{sid}")
        assert await tab.locator(f"text={LONG[:100]}").count() > 0  # on the page
        page_width, window_width = await tab.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth]"
        )
    assert errors == []
    assert page_width <= window_width, f"the page is {page_width} px wide in {window_width} px"
