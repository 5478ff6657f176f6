"""One provider call with its accounting: tokens, latency, estimated cost, and what the
provider did not honour (logged once per model and note)."""

from __future__ import annotations

import time

import structlog

from activities.llm.prices import estimate_cost
from activities.llm.providers.base import Completion, Message, ToolSpec
from workflows.contracts.usage import LLMCall

MAX_TOKENS = 8192
# Agents that design before they write code think first where the provider offers it; the
# others answer short, checkable questions and need not pay for it.
THINKING_AGENTS = frozenset({"reward_author", "reviser", "judge_author"})
# Notes already logged as warnings in this process: once per model and note, not every call.
_WARNED: set[tuple[str, str]] = set()


def call_model(
    agent: str,
    model_name: str,
    messages: list[Message],
    *,
    system: str,
    tools: list[ToolSpec],
    temperature: float | None = 0.0,
    max_tokens: int = MAX_TOKENS,
) -> tuple[Completion, LLMCall]:
    """One provider call with its accounting (tokens, latency, estimated cost) logged."""
    from activities.llm.providers.registry import make_provider

    provider = make_provider(model_name)
    started = time.monotonic()
    completion = provider.complete(
        messages,
        system=system,
        tools=tools,
        max_tokens=max_tokens,
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
