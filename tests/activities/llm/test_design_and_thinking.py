"""Authoring agents design before they code and think where the provider offers it; a sampling
setting a model rejects is reported on the call's record, not dropped silently (issue 29)."""

from __future__ import annotations

from typing import Any

import pytest

from activities.llm.agents import reward
from activities.llm.agents.common import call_model
from activities.llm.providers.anthropic_provider import claude_version, thinking_config
from activities.llm.providers.base import THINKING_BUDGET, Message, ToolCall, ToolResult
from tests.fakes.llm_server import FakeLLMServer, Text, Tools
from workflows.contracts.judging import Criterion

CRITERIA = [
    Criterion(name="speed", description="fast", measure="mean info_x_velocity", target=2.0),
]
CODE = (
    "class R(RewardFunction):\n    def compute(self, obs, action, next_obs, info):\n"
    "        return 1.0, {'alive': 1.0}\n"
)
DESIGN = (
    "Structure: per-step, running is a steady state.\n"
    "Maximiser: would lean forward and fall; the alive term stops it.\n"
    "Criteria: speed <- clipped forward velocity."
)


@pytest.fixture
def fake(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    server.reset()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
    monkeypatch.setenv("OPENAI_API_KEY", "o-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url("openai"))
    return server


def _user() -> list[Message]:
    return [Message(role="user", content="hi")]


# --- design before code -------------------------------------------------------------------------


def test_author_submits_a_design_first_and_it_heads_the_code(fake: FakeLLMServer) -> None:
    fake.push("anthropic", Tools([("submit_reward", {"design": DESIGN, "code": CODE})]))
    code, _ = reward.author("run", "HalfCheetah-v5", CRITERIA, "claude-sonnet-4-6")
    body = fake.requests_for("anthropic")[0].body
    schema = body["tools"][0]["input_schema"]
    # The tool requires the design and asks for it before the code; the prompt says how.
    assert schema["required"] == ["design", "code"] and list(schema["properties"])[0] == "design"
    assert "Design first" in body["system"] and "Phased" in body["system"]
    assert code.design == DESIGN
    assert code.code.startswith(reward.DESIGN_HEADER + "\n# Structure: per-step")
    assert code.code.endswith(CODE) and compile(code.code, "reward", "exec")


def test_reviser_design_replaces_the_one_the_code_carried() -> None:
    old = reward.design_comment("old plan") + CODE
    args = {"diagnosis": "d", "changes": "c", "design": DESIGN, "code": old}
    revised = reward.revision_from(args, [1], "ppo")
    assert revised.reward.code == reward.design_comment(DESIGN) + CODE
    assert "design" in reward.SUBMIT_REVISION.input_schema["required"]
    assert "design" in reward.render_prompt("reviser", reward_contract="")


# --- thinking -----------------------------------------------------------------------------------


def test_reward_author_thinks_on_claude_and_the_reviewer_does_not(fake: FakeLLMServer) -> None:
    fake.push(
        "anthropic",
        Tools([("submit_reward", {"design": DESIGN, "code": CODE})]),
        Tools([("submit_review", {"verdict": "LGTM", "notes": "sound"})]),
    )
    reward.author("run", "HalfCheetah-v5", CRITERIA, "claude-sonnet-4-6")
    reward.review("run", "HalfCheetah-v5", CRITERIA, CODE, "claude-sonnet-4-6")
    authored, reviewed = (r.body for r in fake.requests_for("anthropic"))
    # Claude 4.6 sizes its own thinking; tool choice is left to the model (auto).
    assert authored["thinking"] == {"type": "adaptive"} and "tool_choice" not in authored
    assert authored["max_tokens"] == 8192 + THINKING_BUDGET
    assert "thinking" not in reviewed and reviewed["max_tokens"] == 8192


def test_older_claude_gets_a_thinking_budget_and_a_tool_loop_is_not_thought_through(
    fake: FakeLLMServer,
) -> None:
    fake.push("anthropic", Text("a"), Text("b"))
    _, first = call_model("reviser", "claude-haiku-4-5-20251001", _user(), system="s", tools=[])
    call = ToolCall("toolu_1", "read_reward", {"iteration": 1})
    loop = [
        *_user(),
        Message(role="assistant", tool_calls=(call,)),
        Message(role="tool", tool_results=(ToolResult("toolu_1", "code"),)),
    ]
    _, second = call_model("reviser", "claude-haiku-4-5-20251001", loop, system="s", tools=[])
    a, b = (r.body for r in fake.requests_for("anthropic"))
    assert a["thinking"] == {"type": "enabled", "budget_tokens": THINKING_BUDGET}
    assert a["max_tokens"] > THINKING_BUDGET
    # Our transcripts do not keep thinking blocks, which a thinking tool loop must echo back.
    assert "thinking" not in b
    assert any("thinking off" in n for n in second.notes)
    assert not any("thinking off" in n for n in first.notes)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-sonnet-4-6", {"type": "adaptive"}),
        ("claude-opus-4-1-20250805", {"type": "enabled", "budget_tokens": THINKING_BUDGET}),
        ("claude-3-7-sonnet-20250219", {"type": "enabled", "budget_tokens": THINKING_BUDGET}),
        ("claude-3-5-haiku-20241022", None),
    ],
)
def test_thinking_form_by_claude_version(model: str, expected: dict[str, Any] | None) -> None:
    assert thinking_config(model, _user())[0] == expected
    assert claude_version("claude-haiku-4-5-20251001") == (4, 5)


def test_openai_reasoning_model_reasons_for_authors(fake: FakeLLMServer) -> None:
    fake.push("openai", Text("a"), Text("b"), Text("c"))
    call_model("reward_author", "gpt-5.1", _user(), system="s", tools=[])
    call_model("vlm_judge", "gpt-5.1", _user(), system="s", tools=[])
    call_model("reward_author", "gpt-4o", _user(), system="s", tools=[])
    thinking, judging, plain = (r.body for r in fake.requests_for("openai"))
    assert thinking["reasoning_effort"] == "medium"
    assert "reasoning_effort" not in judging and "reasoning_effort" not in plain


# --- settings reported, not dropped -------------------------------------------------------------


def test_a_temperature_the_model_rejects_is_reported(
    fake: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.push("anthropic", Text("a"))
    fake.push("openai", Text("b"), Text("c"), Text("d"))
    _, claude = call_model(
        "reviewer", "claude-sonnet-4-6", _user(), system="s", tools=[], temperature=0.8
    )
    _, gpt5 = call_model("reviewer", "gpt-5", _user(), system="s", tools=[], temperature=0.8)
    _, gpt4o = call_model("reviewer", "gpt-4o", _user(), system="s", tools=[], temperature=0.8)
    assert claude.notes == ["temperature 0.8 not sent: this Anthropic API rejects it"]
    assert gpt5.notes == ["temperature 0.8 not sent: gpt-5 rejects it"]
    assert gpt4o.notes == [] and fake.requests_for("openai")[1].body["temperature"] == 0.8
    # ... and a person sees it in the worker's log, once per model and setting.
    assert "llm setting not honoured" in capsys.readouterr().out
    call_model("reviewer", "gpt-5", _user(), system="s", tools=[], temperature=0.8)
    assert "llm setting not honoured" not in capsys.readouterr().out


def test_the_revision_after_a_tool_round_thinks_as_the_first_call_did(
    fake: FakeLLMServer,
) -> None:
    """The reviser's thinking blocks go back with its tool calls (through the transcript kept
    in S3 between its calls), so the call that writes the design and code thinks too, with the
    same token limit as the first."""
    from activities.llm.agents import dialogue

    fake.push(
        "anthropic",
        Tools([("read_reward", {"iteration": 1})], thinking="Look at the reward first."),
        Tools(
            [
                (
                    "submit_revision",
                    {"diagnosis": "d", "changes": "c", "design": DESIGN, "code": CODE},
                )
            ]
        ),  # fmt: skip
    )
    first = reward.revise_turn("claude-sonnet-4-6", _user(), final=False)
    assert not first.done
    kept = dialogue.load(dialogue.dump(first.messages))  # as S3 keeps it between calls
    results = Message(role="tool", tool_results=(ToolResult(first.messages[-1].tool_calls[0].id,
                                                            "the code"),))  # fmt: skip
    done = reward.revise_turn("claude-sonnet-4-6", [*kept, results], final=True)
    assert done.done and done.arguments["code"] == CODE
    a, b = (r.body for r in fake.requests_for("anthropic"))
    assert a["thinking"] == b["thinking"] == {"type": "adaptive"}
    assert a["max_tokens"] == b["max_tokens"] == 8192 + THINKING_BUDGET
    echoed = b["messages"][1]["content"]
    assert echoed[0]["type"] == "thinking" and echoed[0]["thinking"] == "Look at the reward first."
    assert echoed[0]["signature"] and echoed[-1]["type"] == "tool_use"
    assert done.call is not None and not any("thinking off" in n for n in done.call.notes)
