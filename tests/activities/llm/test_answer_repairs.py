"""Answers in the wrong form, through the real SDKs against the local provider server: taken
when their form is unambiguous, repaired in the same conversation when not (the model told what
was wrong), every call counted, and a refusal that ends the stage in one call."""

from __future__ import annotations

import json

import pytest
from temporalio.exceptions import ApplicationError

from activities.llm.agents import answers, reward
from activities.llm.agents import criteria as criteria_agent
from activities.llm.agents.common import MAX_TOKENS
from tests.fakes.llm_server import FakeLLMServer, Text, Tools
from workflows.contracts.judging import Criterion
from workflows.contracts.usage import LLMCall, LLMUsage

MODEL = "claude-sonnet-4-6"
CRITERIA = [Criterion(name="speed", description="fast", measure="mean v_x", target=2.0)]
CODE = (
    "class R(RewardFunction):\n    def compute(self, obs, action, next_obs, info):\n"
    "        return 1.0, {'alive': 1.0}\n"
)
ITEMS = [
    {"name": n, "description": n, "measure": "m", "target": 1, "direction": "at_least"}
    for n in ("speed", "upright", "calm")
]


@pytest.fixture
def fake(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    server.reset()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
    return server


def _author() -> tuple[reward.RewardCode, LLMCall]:
    return reward.author("run forward", "HalfCheetah-v5", CRITERIA, MODEL)


def _told(fake: FakeLLMServer, n: int) -> str:
    """What the n-th request (from 0) said last: the repair the model was sent."""
    last = fake.requests_for("anthropic")[n].body["messages"][-1]
    return json.dumps(last["content"])


def test_code_under_another_tool_name_is_taken_in_one_call(fake: FakeLLMServer):
    fake.push("anthropic", Tools([("write_file", {"path": "reward.py", "content": CODE})]))
    code, call = _author()
    assert "class R(RewardFunction)" in code.code and call.calls == 1


def test_unfenced_code_in_the_text_is_taken(fake: FakeLLMServer):
    fake.push("anthropic", Text(CODE))
    code, call = _author()
    assert code.code.endswith(CODE) and call.calls == 1


def test_a_list_sent_as_a_json_string_is_read_as_the_list(fake: FakeLLMServer):
    fake.push("anthropic", Tools([("submit_criteria", {"criteria": json.dumps(ITEMS)})]))
    criteria, call = criteria_agent.elicit("run forward", "Ant-v5", MODEL)
    assert [c.name for c in criteria] == ["speed", "upright", "calm"] and call.calls == 1


def test_two_tools_each_holding_code_are_ambiguous_and_asked_again(fake: FakeLLMServer):
    other = CODE.replace("1.0, {", "2.0, {")
    fake.push("anthropic", Tools([("a", {"code": CODE}), ("b", {"src": other})]))
    fake.push("anthropic", Tools([("submit_reward", {"design": "d", "code": other})]))
    code, call = _author()
    assert "2.0" in code.code and call.calls == 2
    # Every tool call of the reply is answered (the API requires it), each saying what to do.
    told = _told(fake, 1)
    assert told.count('"tool_result"') == 2 and "called a, b, not submit_reward" in told


def test_a_reply_cut_at_the_token_limit_is_asked_again_with_a_larger_limit(
    fake: FakeLLMServer,
):
    fake.push("anthropic", Text("I will design it carefully: first", stop="max_tokens"))
    fake.push("anthropic", Tools([("submit_reward", {"design": "short", "code": CODE})]))
    code, call = _author()
    assert call.calls == 2 and call.input_tokens == 12 + 20
    first, second = (r.body["max_tokens"] for r in fake.requests_for("anthropic"))
    # Thinking adds the same budget to both; the answer's own limit doubled.
    assert second - first == MAX_TOKENS
    assert "cut at the token limit (8,192 tokens)" in _told(fake, 1)


def test_a_reply_cut_every_time_ends_the_stage_with_every_call_counted(fake: FakeLLMServer):
    for _ in range(answers.REPAIRS + 1):
        fake.push("anthropic", Text("Let me think about", stop="max_tokens"))
    with pytest.raises(ApplicationError) as info:
        _author()
    err = info.value
    assert err.type == "LLMBadAnswer" and err.non_retryable
    assert "reward_author: no usable answer in 3 calls" in err.message
    assert "cut at the token limit" in err.message and "\n" not in err.message
    spent = LLMCall.model_validate(err.details[0])
    assert spent.calls == 3 and spent.output_tokens == 21
    assert LLMUsage().add(spent).calls == 3  # what the session counts


def test_an_answer_without_code_is_told_so_and_repaired(fake: FakeLLMServer):
    fake.push("anthropic", Tools([("submit_reward", {"design": "pay for speed"})]))
    fake.push("anthropic", Tools([("submit_reward", {"design": "pay for speed", "code": CODE})]))
    code, call = _author()
    assert call.calls == 2 and code.design == "pay for speed"
    assert "no usable 'code'" in _told(fake, 1)


def test_the_elicitor_declines_in_one_call(fake: FakeLLMServer):
    why = "A swimmer lies on the floor of its tank and cannot jump over a wall."
    fake.push("anthropic", Tools([("submit_criteria", {"criteria": [], "refusal": why})]))
    with pytest.raises(ApplicationError) as info:
        criteria_agent.elicit("jump over the wall", "Swimmer-v5", MODEL)
    err = info.value
    assert err.type == "LLMRefused" and err.non_retryable
    assert err.message == f"refused: {why}"
    assert LLMCall.model_validate(err.details[0]).calls == 1
    assert len(fake.requests_for("anthropic")) == 1


def test_repairs_stop_where_the_cost_cap_leaves_no_room(fake: FakeLLMServer):
    fake.push("anthropic", Text("no code here"))
    fake.push("anthropic", Tools([("submit_reward", {"code": CODE})]))
    token = answers.COST_LEFT.set(0.0001)  # less than two calls of 12 + 7 tokens
    try:
        with pytest.raises(ApplicationError) as info:
            _author()
    finally:
        answers.COST_LEFT.reset(token)
    assert "would pass the session's LLM cost cap" in info.value.message
    assert len(fake.requests_for("anthropic")) == 1


def test_unfenced_code_between_prose_is_found_and_prose_alone_is_not() -> None:
    text = f"Here is the module.\n\n{CODE}\nIt pays one per step alive."
    assert answers.unfenced_code(text) == CODE
    assert answers.unfenced_code("I would define a class for it and return the speed.") is None
    assert answers.is_code("def f(:\n  pass") is False
