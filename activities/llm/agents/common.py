"""What every agent shares: prompt files, one accounted provider call, parsing the answer.

Agents ask for their answer through a tool (`submit_*`) so that every provider returns
structured arguments; a model or local server that answers in plain text instead is still
understood (a ```python block for code, a JSON object for data).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import structlog
from temporalio.exceptions import ApplicationError

from activities.llm.prices import estimate_cost
from activities.llm.providers.base import Completion, Media, Message, ToolSpec
from workflows.contracts.usage import LLMCall

PROMPTS = Path(__file__).parent / "prompts"
MAX_TOKENS = 8192
# Agents that design before they write code think first where the provider offers it; the
# others answer short, checkable questions and need not pay for it.
THINKING_AGENTS = frozenset({"reward_author", "reviser", "judge_author"})
# Notes already logged as warnings in this process: once per model and note, not every call.
_WARNED: set[tuple[str, str]] = set()


@cache
def _prompt_file(name: str) -> str:
    return (PROMPTS / f"{name}.md").read_text()


def render_prompt(name: str, **values: str) -> str:
    """prompts/<name>.md with each {{key}} replaced (plain braces stay, for code examples)."""
    text = _prompt_file(name)
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    missing = re.findall(r"\{\{(\w+)\}\}", text)
    if missing:
        raise KeyError(f"prompt {name}: no value for {missing}")
    return text


@dataclass(frozen=True)
class AgentAnswer:
    """An agent's one call: its structured answer, the raw completion and its accounting."""

    arguments: dict[str, Any]  # the submit tool's arguments (or what the text fallback found)
    completion: Completion
    call: LLMCall


def call_model(
    agent: str,
    model_name: str,
    messages: list[Message],
    *,
    system: str,
    tools: list[ToolSpec],
    temperature: float | None = 0.0,
) -> tuple[Completion, LLMCall]:
    """One provider call with its accounting (tokens, latency, estimated cost) logged."""
    from activities.llm.providers.registry import make_provider

    provider = make_provider(model_name)
    started = time.monotonic()
    completion = provider.complete(
        messages,
        system=system,
        tools=tools,
        max_tokens=MAX_TOKENS,
        temperature=temperature,
        thinking=agent in THINKING_AGENTS,
    )
    latency = time.monotonic() - started
    usage = completion.usage
    call = LLMCall(
        agent=agent,
        model=model_name,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        latency_s=round(latency, 3),
        cost_usd=estimate_cost(model_name, usage.input_tokens, usage.output_tokens),
        notes=list(completion.notes),
    )
    for note in completion.notes:
        if (model_name, note) not in _WARNED:
            _WARNED.add((model_name, note))
            structlog.get_logger().warning("llm setting not honoured", model=model_name, note=note)
    structlog.get_logger().info(
        "llm call",
        agent=agent,
        model=model_name,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        latency_s=call.latency_s,
        cost_usd=call.cost_usd,
    )
    return completion, call


def ask(
    agent: str,
    model_name: str,
    *,
    system: str,
    user: str,
    tool: ToolSpec,
    temperature: float | None = 0.0,
    media: tuple[Media, ...] = (),
) -> AgentAnswer:
    """One provider call: the agent's answer as the submit tool's arguments, with accounting."""
    completion, call = call_model(
        agent,
        model_name,
        [Message(role="user", content=user, media=media)],
        system=system,
        tools=[tool],
        temperature=temperature,
    )
    return AgentAnswer(submitted_arguments(completion, tool), completion, call)


def submitted_arguments(completion: Completion, tool: ToolSpec) -> dict[str, Any]:
    """The submit tool's arguments; failing that, JSON or a code block found in the text (else a
    retryable LLMBadAnswer)."""
    for tc in completion.tool_calls:
        if tc.name == tool.name:
            return dict(tc.arguments)
    # Text fallback: a JSON object, and/or a fenced python block for a "code" field.
    text = completion.text or ""
    found: dict[str, Any] = {}
    obj = _json_object(text)
    if obj is not None:
        found.update(obj)
    code = extract_code(text)
    if code and "code" not in found:
        found["code"] = code
    if not found:
        raise ApplicationError(
            f"the model answered without calling {tool.name} and without code or JSON: "
            f"{_snippet(text)}",
            type="LLMBadAnswer",
        )
    return found


_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str | None:
    """The longest fenced code block, or None."""
    blocks = _FENCE.findall(text or "")
    return max(blocks, key=len).strip() + "\n" if blocks else None


def _json_object(text: str) -> dict[str, Any] | None:
    candidates = re.findall(r"```json\s*\n(.*?)```", text, re.DOTALL)
    if not candidates and "{" in text:
        candidates = [text[text.find("{") : text.rfind("}") + 1]]
    for raw in candidates:
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _snippet(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= limit else line[: limit - 3] + "...")


def require(args: dict[str, Any], field: str, kind: type, agent: str) -> Any:
    """A field of the agent's answer, or a retryable error saying what the model left out."""
    value = args.get(field)
    if not isinstance(value, kind) or (isinstance(value, str | list) and not value):
        raise ApplicationError(
            f"{agent}: the model's answer has no usable '{field}' ({type(value).__name__})",
            type="LLMBadAnswer",
        )
    return value


def answer_text(
    args: dict[str, Any], field: str, limit: int | None = None, default: str = ""
) -> str:
    """A text field of the agent's answer on one line, cut to `limit` characters."""
    return " ".join(str(args.get(field) or default).split())[:limit]


def clean_code(code: str) -> str:
    """Code from a tool argument, without a stray markdown fence around it."""
    inner = extract_code(code) if "```" in code else None
    return (inner or code).strip() + "\n"
