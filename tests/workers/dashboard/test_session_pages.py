"""The session list comes in pages (newest first, a cursor to the next, filters applied before
paging), and sessions stuck without a worker cost a refresh nothing after their first look
(real Temporal dev server; sessions started on a task queue no worker polls)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from tests.workers.dashboard.client import Http
from workflows import search


async def _start(
    client: Client, sid: str, model: str, env: str, memo: bool = True
) -> WorkflowHandle[Any, Any]:
    """A SessionWorkflow nothing runs: it stays Running, as a stuck session does."""
    attributes = TypedSearchAttributes(
        [SearchAttributePair(search.MODEL, model), SearchAttributePair(search.ENV, env)]
    )
    return await client.start_workflow(
        "SessionWorkflow",
        id=sid,
        task_queue=f"nobody-{model}",
        memo={"prompt": f"prompt of {sid}"} if memo else None,
        search_attributes=attributes,
    )


async def _sessions(http: Http, **params: str) -> dict[str, Any]:
    status, _, body = await http.get(f"/api/sessions?{urlencode(params)}")
    assert status == 200, body[:500]
    return json.loads(body)


def _ids(answer: dict[str, Any]) -> list[str]:
    return [row["session_id"] for row in answer["sessions"]]


async def _listed(http: Http, count: int, **params: str) -> None:
    """Wait for the visibility store to hold `count` of them."""
    for _ in range(100):
        if len(_ids(await _sessions(http, **params, limit="200"))) == count:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{count} sessions never listed for {params}")


@pytest.fixture
async def eight(temporal_env, s3) -> AsyncIterator[tuple[str, list[str]]]:
    """(model, session ids oldest first): eight stuck sessions, the even ones on Ant-v5."""
    model = f"paging-{uuid.uuid4().hex[:8]}"
    handles = []
    for n in range(8):
        env = "Ant-v5" if n % 2 == 0 else "HalfCheetah-v5"
        handles.append(await _start(temporal_env.client, f"{model}-{n}", model, env))
    try:
        yield model, [h.id for h in handles]
    finally:
        await asyncio.gather(*(h.terminate() for h in handles))


async def test_the_list_comes_in_pages_newest_first(open_dashboard, eight):
    model, ids = eight
    http = Http(open_dashboard)
    await _listed(http, 8, model=model)
    newest = ids[::-1]
    first = await _sessions(http, model=model, limit="3")
    assert _ids(first) == newest[:3] and first["next_page"]
    second = await _sessions(http, model=model, limit="3", page=first["next_page"])
    assert _ids(second) == newest[3:6]
    third = await _sessions(http, model=model, limit="3", page=second["next_page"])
    assert _ids(third) == newest[6:] and third["next_page"] is None
    assert first["sessions"][0]["prompt"] == f"prompt of {newest[0]}"


async def test_a_filter_narrows_before_paging(open_dashboard, eight):
    model, ids = eight
    http = Http(open_dashboard)
    await _listed(http, 8, model=model)
    ant = [sid for n, sid in enumerate(ids) if n % 2 == 0][::-1]
    first = await _sessions(http, model=model, env="Ant-v5", limit="3")
    assert _ids(first) == ant[:3]
    second = await _sessions(http, model=model, env="Ant-v5", limit="3", page=first["next_page"])
    assert _ids(second) == ant[3:]
    # A cursor is for the filters it was given with.
    status, _, _ = await http.get(
        f"/api/sessions?{urlencode({'model': model, 'page': first['next_page']})}"
    )
    assert status == 400


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "0"},
        {"limit": "201"},
        {"limit": "x"},
        {"page": "%%%"},
        {"page": "bm90IGEgdG9rZW4="},
    ],
)
async def test_a_bad_page_or_size_is_a_400(open_dashboard, params):
    status, _, body = await Http(open_dashboard).get(f"/api/sessions?{urlencode(params)}")
    assert status == 400, body[:500]


async def test_the_list_page_keeps_its_page_and_size(open_dashboard):
    status, _, body = await Http(open_dashboard).get("/?model=m&limit=3&page=abc")
    page = body.decode()
    assert status == 200
    assert 'name="page" value="abc"' in page and 'name="limit" value="3"' in page
    assert 'id="next-page"' in page


async def test_stuck_sessions_without_a_prompt_are_asked_once(open_dashboard, temporal_env):
    """No memo and no worker: the first look waits on their queries, the next does not."""
    model = f"stuck-{uuid.uuid4().hex[:8]}"
    client = temporal_env.client
    handles = [await _start(client, f"{model}-{n}", model, "Ant-v5", memo=False) for n in range(5)]
    http = Http(open_dashboard)
    try:
        await _listed(http, 5, model=model)
        started = time.monotonic()
        answer = await _sessions(http, model=model)
        again = time.monotonic() - started
        assert [row["prompt"] for row in answer["sessions"]] == [None] * 5
        assert again < 1.0, f"a refresh took {again:.1f} s"
    finally:
        await asyncio.gather(*(h.terminate() for h in handles))
