"""A real session whose model answers in every wrong form the issue names still ends judged:
through the real workflow and workers, with the real Anthropic SDK pointed at the local server.

The elicitor sends its criteria list as a JSON string; candidate 1's author sends its code as
plain text without a fence; candidate 2's author never sends code (three replies), so the
candidate is dropped; the judge author's first reply is cut at the token limit and its second
sends the code under another tool's name; the reviewer's replies are all cut at the limit, so
candidate 1 trains unreviewed; the video judge is down after training. Every paid call is
counted, and each repair told the model what was wrong."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.builders import FORWARD_REWARD
from tests.e2e.test_llm_session import llm_session, tools
from tests.fakes.agents import CRITERIA, JUDGE, agent_asked
from tests.fakes.llm_server import Error, FakeLLMServer, Reply, Text


class WrongForms:
    """Answers each agent in the wrong form; records what was served (200s) per agent."""

    def __init__(self) -> None:
        self.served: dict[str, int] = {}

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        agent = agent_asked(body)
        reply = self.reply(agent, body)
        if not isinstance(reply, Error):
            self.served[agent] = self.served.get(agent, 0) + 1
        return reply

    def reply(self, agent: str, body: dict[str, Any]) -> Reply:
        turns = len(body["messages"])
        first = body["messages"][0]["content"]
        text = first if isinstance(first, str) else json.dumps(first)
        if agent == "elicitor":
            return tools([("submit_criteria", {"criteria": json.dumps(CRITERIA)})], 900, 200)
        if agent == "reward_author" and "Candidate 1 of 2" in text:
            return Text("Here is the reward module.\n\n" + FORWARD_REWARD, 900, 300)
        if agent == "reward_author":
            return Text("I would pay for forward speed and penalise effort.", 900, 40)
        if agent == "judge_author" and turns == 1:
            return Text("def judge_fn(trajectory):\n    up = ", 900, 8192, stop="max_tokens")
        if agent == "judge_author":
            return tools([("write_file", {"path": "judge.py", "content": JUDGE})], 900, 300)
        if agent == "reviewer":
            return Text("The reward looks sound but", 900, 8192, stop="max_tokens")
        if agent == "vlm_criteria":
            items = [{"name": "moves_forward", "look_for": "the body travels to the right"}]
            items.append({"name": "stays_up", "look_for": "the back stays on top"})
            return tools([("submit_visual_criteria", {"criteria": items})], 500, 60)
        if agent == "vlm_judge":
            return Error(503, "overloaded")
        raise AssertionError(f"unexpected agent {agent}")


def _told(server: FakeLLMServer, agent: str) -> list[str]:
    """What the model was told after each reply of this agent that was not taken."""
    out = []
    for r in server.requests:
        if f"policyforge's {agent}" not in r.prompt().system or len(r.body["messages"]) == 1:
            continue
        last = r.body["messages"][-1]["content"]
        blocks = [last] if isinstance(last, str) else last
        for block in blocks:
            said = block if isinstance(block, str) else block.get("content") or block.get("text")
            out.append(said if isinstance(said, str) else json.dumps(said))
    return out


@pytest.mark.slow  # a real session: two candidates authored, one trained and judged
async def test_answers_in_the_wrong_form_are_taken_or_repaired_and_the_session_ends_judged(
    temporal_env, s3, queue_prefix, monkeypatch
):
    script = WrongForms()
    async with llm_session(
        temporal_env, queue_prefix, monkeypatch, script, candidates=2, max_iterations=1
    ) as (server, handle):
        result = await asyncio.wait_for(handle.result(), timeout=600)

    assert result.status in ("passed", "not_passed"), result.note  # judged, not failed
    [record] = result.iterations
    assert record.runs == 1 and record.candidate == 0  # candidate 2 was dropped
    dropped = " ".join(record.dropped)
    assert "candidate 2 dropped: authoring: the reward author failed" in dropped
    assert "no usable answer in 3 calls" in dropped
    assert "candidate 1 not reviewed: reviewing: the reviewer failed" in dropped
    assert "cut at the token limit" in dropped
    # The video judge was down: the code judge's verdict stands, and says so.
    assert record.video_note and "video judge unavailable" in record.video_note
    # Calls: the elicitor 1 (its string decoded), candidate 1 1 (plain code), candidate 2 3,
    # the judge author 2 (cut, then another tool's name), the reviewer 3, the visual criteria 1.
    assert script.served == {
        "elicitor": 1,
        "reward_author": 4,
        "judge_author": 2,
        "reviewer": 3,
        "vlm_criteria": 1,
    }
    # Every call that was answered is counted, those whose answers were not taken too.
    assert result.llm_usage.calls == sum(script.served.values()) == 11
    told = _told(server, "judge author")
    assert len(told) == 1 and "cut at the token limit (8,192 tokens)" in told[0]
    limits = [r.body["max_tokens"] for r in server.requests if "judge author" in r.prompt().system]
    assert limits[1] > limits[0]
    told = _told(server, "reward author")
    assert len(told) == 2 and all("held none of the fields design, code" in t for t in told)


class Declines:
    """The elicitor declines the intent."""

    def __init__(self, why: str) -> None:
        self.why, self.agents = why, []

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        self.agents.append(agent_asked(body))
        return tools([("submit_criteria", {"criteria": [], "refusal": self.why})], 900, 60)


async def test_a_model_that_declines_ends_the_session_refused_after_one_call(
    temporal_env, s3, queue_prefix, monkeypatch
):
    from temporalio.client import WorkflowFailureError

    from workers.cli.session_state import failure_reason
    from workflows.session import SessionWorkflow

    why = "A swimmer lies on the floor of its tank; it cannot jump over a wall."
    script = Declines(why)
    async with llm_session(
        temporal_env, queue_prefix, monkeypatch, script, env_id="Swimmer-v5",
        prompt="jump over the wall",
    ) as (server, handle):  # fmt: skip
        with pytest.raises(WorkflowFailureError) as info:
            await asyncio.wait_for(handle.result(), timeout=120)
        status = await handle.query(SessionWorkflow.status)
    assert script.agents == ["elicitor"]  # one call, not five paid parse errors
    assert failure_reason(info.value) == f"refused: {why}"
    assert status.stage == "failed" and status.note == f"refused: {why}"
    assert status.llm_usage.calls == 1 and status.llm_usage.cost_usd > 0


class Priced:
    """Every agent answers well; each call costs (900 in, 300 out) at Sonnet's price."""

    def __init__(self) -> None:
        self.agents: list[str] = []

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        agent = agent_asked(body)
        self.agents.append(agent)
        if agent == "elicitor":
            return tools([("submit_criteria", {"criteria": CRITERIA})], 900, 300)
        if agent == "reward_author":
            return tools([("submit_reward", {"design": "d", "code": FORWARD_REWARD})], 900, 300)
        if agent == "judge_author":
            return tools([("submit_judge", {"code": JUDGE})], 900, 300)
        raise AssertionError(f"unexpected agent {agent}")


async def test_the_cost_cap_stops_the_session_before_a_call_that_would_pass_it(
    temporal_env, s3, queue_prefix, monkeypatch
):
    per_call = (900 * 3 + 300 * 15) / 1e6  # $0.0072
    cap = 1.5 * per_call  # room for the elicitor's call, not for another like it
    script = Priced()
    async with llm_session(
        temporal_env, queue_prefix, monkeypatch, script, max_llm_cost_usd=cap, vlm_judge=False
    ) as (server, handle):
        result = await asyncio.wait_for(handle.result(), timeout=120)
    assert result.status == "budget_exhausted"
    assert script.agents == ["elicitor"]
    assert result.llm_usage.cost_usd == pytest.approx(per_call) and result.llm_usage.cost_usd <= cap
    assert "would pass the cap" in (result.note or "")
