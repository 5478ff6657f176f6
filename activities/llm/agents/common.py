"""What every agent shares: prompt files, one accounted provider call, asking for an answer.

Agents ask for their answer through a tool (`submit_*`) so that every provider returns
structured arguments; an answer in another unambiguous form is still taken, and one that cannot
be is repaired in the same conversation (answers.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from temporalio.exceptions import ApplicationError

from activities.llm.agents.answers import converse, extract_code
from activities.llm.agents.calls import MAX_TOKENS, call_model
from activities.llm.providers.base import Media, Message, ToolSpec
from workflows.contracts.usage import LLMCall

__all__ = ["MAX_TOKENS", "AgentAnswer", "ask", "call_model", "clean_code", "render_prompt"]

T = TypeVar("T")

PROMPTS = Path(__file__).parent / "prompts"


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
    """An agent's answer: the submit tool's arguments as taken, their parsed value and the
    accounting of every call it took (repairs included)."""

    arguments: dict[str, Any]
    value: Any
    call: LLMCall


def ask(
    agent: str,
    model_name: str,
    *,
    system: str,
    user: str,
    tool: ToolSpec,
    temperature: float | None = 0.0,
    media: tuple[Media, ...] = (),
    parse: Any = None,
) -> AgentAnswer:
    """The agent's answer to one user turn, as the submit tool's arguments and `parse`'s value
    of them (an ApplicationError of type LLMBadAnswer from `parse` is told to the model and the
    answer asked again; answers.REPAIRS times at most)."""
    reply = converse(
        agent,
        model_name,
        [Message(role="user", content=user, media=media)],
        system=system,
        submit=tool,
        parse=parse or dict,
        temperature=temperature,
    )
    return AgentAnswer(reply.arguments, reply.value, reply.call)


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
