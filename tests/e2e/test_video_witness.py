"""The video judge is a witness, never a single point of failure: through the real workflow and
workers, with the real Anthropic SDK pointed at a local server speaking the Messages API, a
session whose video judge fails after training (the provider answers 500 on every attempt)
still ends with its trained run judged by the code judge, and says the video judge was
unavailable; the video judge's request carried the session's criteria and their targets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from activities.artifacts import ArtifactStore
from tests.builders import FORWARD_REWARD
from tests.e2e.test_llm_session import llm_session, tools
from tests.fakes.agents import CRITERIA, JUDGE, agent_asked
from tests.fakes.llm_server import Error, Reply

VISUAL = [
    {"name": "moves_forward", "look_for": "the floor slides left"},
    {"name": "stays_up", "look_for": "the back stays on top"},
]


class Outage:
    """Every agent answers, except the video judge: the provider is down for it."""

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.video_requests: list[dict[str, Any]] = []

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        agent = agent_asked(body)
        self.agents.append(agent)
        if agent == "vlm_judge":
            self.video_requests.append(body)
            return Error(500, "the video model is overloaded")
        if agent == "elicitor":
            return tools([("submit_criteria", {"criteria": CRITERIA})], 900, 200)
        if agent == "reward_author":
            return tools([("submit_reward", {"code": FORWARD_REWARD, "summary": "v_x"})], 900, 300)
        if agent == "judge_author":
            return tools([("submit_judge", {"code": JUDGE, "summary": "up"})], 900, 300)
        if agent == "vlm_criteria":
            return tools([("submit_visual_criteria", {"criteria": VISUAL})], 500, 60)
        if agent == "reviewer":
            return tools([("submit_review", {"verdict": "LGTM", "notes": "fine"})], 900, 50)
        raise AssertionError(f"unexpected agent {agent}")


@pytest.mark.slow  # a real session, and the video judge's five attempts with their backoff
async def test_a_video_judge_outage_after_training_keeps_the_code_judged_run(
    temporal_env, s3, queue_prefix, monkeypatch
):
    outage = Outage()
    inputs = {"max_iterations": 1, "eval_max_steps": 30, "pass_threshold": 0.5}
    async with llm_session(temporal_env, queue_prefix, monkeypatch, outage, **inputs) as (
        _,
        handle,
    ):
        result = await asyncio.wait_for(handle.result(), timeout=600)

    # Retried as any provider fault (five attempts), then given up on: the session went on.
    assert outage.agents.count("vlm_judge") == 5
    assert result.status in ("passed", "not_passed")
    (record,) = result.iterations
    assert record.video_note is not None
    assert record.video_note.startswith("video judge unavailable: ")
    assert "overloaded" in record.video_note
    assert "Video judge unavailable: " in record.diagnosis
    assert "video_judge_unavailable" in record.failure_tags
    assert record.visual_score is None and "synthesizer" not in outage.agents
    # The trained run is kept and judged by the code judge alone: its criteria measured.
    assert record.criteria and all(c.measured and c.met is not None for c in record.criteria)
    assert record.passed == all(c.met for c in record.criteria)
    assert ArtifactStore().exists(record.best_run.model_key)
    assert result.best is not None and result.best.best_run == record.best_run

    # The video judge was told the session's criteria and their targets, beside its own.
    content = outage.video_requests[0]["messages"][0]["content"]
    text = "\n".join(part.get("text", "") for part in content if part.get("type") == "text")
    assert "# What the trajectory judge measures" in text
    for c in CRITERIA:
        assert f"- `{c['name']}`: {c['description']}" in text
    assert "Measured: mean absolute qvel, rad/s. Target: at least 0.001." in text
    assert "Target: at least 1.00." in text
    assert "`moves_forward`: the floor slides left" in text
