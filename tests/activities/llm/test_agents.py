"""The agents against a local server speaking the providers' wire protocols (real SDK clients)."""

from __future__ import annotations

import json

import pytest
from temporalio.exceptions import ApplicationError

from activities.llm.agents import criteria as criteria_agent
from activities.llm.agents import reward
from tests.fakes.llm_server import FakeLLMServer, Text, Tools
from workflows.contracts.judging import Criterion
from workflows.contracts.usage import LLMCall

CRITERIA = [
    Criterion(name="speed", description="fast", measure="mean info_x_velocity", target=2.0),
]
ANT_CRITERIA = [
    {"name": n, "description": n, "measure": "m", "target": 1, "direction": "at_least"}
    for n in ("speed", "upright", "calm")
]
CODE = (
    "class R(RewardFunction):\n    def compute(self, obs, action, next_obs, info):\n"
    "        return 1.0, {'alive': 1.0}\n"
)


@pytest.fixture
def fake(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    server.reset()
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url("gemini"))
    monkeypatch.setenv("POLICYFORGE_OPENAI_BASE_URL", server.base_url("openai-compatible"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
    return server


def test_elicitor_on_gemini_gets_criteria_through_its_tool(fake: FakeLLMServer):
    items = [
        {"name": n, "description": n, "measure": "m", "target": 1, "direction": "at_least"}
        for n in ("speed", "upright", "calm")
    ]
    fake.push("gemini", Tools([("submit_criteria", {"criteria": items})], output_tokens=99))
    criteria, call = criteria_agent.elicit("run forward", "Ant-v5", "gemini-2.5-pro")
    assert [c.name for c in criteria] == ["speed", "upright", "calm"]
    assert call.agent == "elicitor" and call.output_tokens == 99 and call.cost_usd is not None
    sent = fake.requests_for("gemini")[0].prompt()
    assert "intent elicitor" in sent.system
    # The prompt carries the live env spec: Ant's 105-entry observation.
    assert "run forward" in sent.user and "105" in sent.user


def test_the_elicitor_is_told_the_budget_and_what_random_actions_do(fake: FakeLLMServer):
    items = [
        {"name": n, "description": n, "measure": "m", "target": 1, "unit": "m/s"}
        for n in ("speed", "upright", "calm")
    ]
    fake.push("anthropic", Tools([("submit_criteria", {"criteria": items})]))
    criteria, _ = criteria_agent.elicit(
        "walk forward", "Humanoid-v5", "claude-sonnet-4-6", budget=(300_000, "ppo", 3)
    )
    assert criteria[0].unit == "m/s"
    user = fake.requests_for("anthropic")[0].prompt().user
    assert "300,000 environment steps of PPO" in user and "up to 3 iterations" in user
    # A random Humanoid falls within a few dozen steps: the elicitor reads that, in numbers.
    section = user[user.index("# What random actions do") :]
    assert "3 of 3 ended early" in section and "info['x_velocity']" in section


def test_too_few_criteria_are_told_to_the_model_and_its_next_answer_taken(fake: FakeLLMServer):
    items = [{"name": "speed", "description": "d", "measure": "m", "target": 1}]
    fake.push("gemini", Tools([("submit_criteria", {"criteria": items})]))
    fake.push("gemini", Tools([("submit_criteria", {"criteria": ANT_CRITERIA})]))
    criteria, call = criteria_agent.elicit("run forward", "Ant-v5", "gemini-2.5-pro")
    assert [c.name for c in criteria] == [c["name"] for c in ANT_CRITERIA]
    assert call.calls == 2 and call.input_tokens == 40  # both paid calls counted
    # The second request goes on with the first: the reply, then what was wrong with it.
    second = fake.requests_for("gemini")[1].body
    told = json.dumps(second["contents"][-1])
    assert "expected 3-8 uniquely named criteria" in told and "submit_criteria" in told


def test_criteria_wrong_every_time_end_the_stage_with_every_call_counted(fake: FakeLLMServer):
    items = [{"name": "speed", "description": "d", "measure": "m", "target": 1}]
    for _ in range(3):
        fake.push("gemini", Tools([("submit_criteria", {"criteria": items})]))
    with pytest.raises(ApplicationError) as info:
        criteria_agent.elicit("run forward", "Ant-v5", "gemini-2.5-pro")
    err = info.value
    assert err.type == "LLMBadAnswer" and err.non_retryable  # not retried blindly
    assert "no usable answer in 3 calls" in err.message and "3-8" in err.message
    assert LLMCall.model_validate(err.details[0]).calls == 3


def test_local_server_answering_in_plain_text_still_gives_code(fake: FakeLLMServer):
    fake.push("openai", Text(f"Here you go:\n\n```python\n{CODE}```\nGood luck."))
    code, call = reward.author(
        "stand still", "Hopper-v5", CRITERIA, "openai-compatible:qwen2.5-coder"
    )
    assert code.code == CODE and call.cost_usd == 0.0
    body = fake.requests_for("openai")[0].body
    assert (
        body["model"] == "qwen2.5-coder" and body["tools"][0]["function"]["name"] == "submit_reward"
    )


def test_reviewer_returns_corrected_code_or_lgtm(fake: FakeLLMServer):
    fake.push(
        "anthropic",
        Tools([("submit_review", {"verdict": "CHANGES", "notes": "sign of ctrl", "code": CODE})]),
        Tools([("submit_review", {"verdict": "LGTM", "notes": "sound"})]),
    )
    changed, _ = reward.review("run", "HalfCheetah-v5", CRITERIA, "x = 1\n", "claude-sonnet-4-6")
    assert not changed.lgtm and changed.corrected is not None and changed.corrected.code == CODE
    same, _ = reward.review("run", "HalfCheetah-v5", CRITERIA, CODE, "claude-sonnet-4-6")
    assert same.lgtm and same.corrected is None
    assert "Reward code to review" in fake.requests_for("anthropic")[0].prompt().user
