"""Agents that use tools over several calls, one provider call per activity.

Between calls the conversation lives in S3 as JSON (one immutable file per turn, so a retried
activity rewrites the same key with the same content) and the workflow runs the tools the model
asked for as activities. A turn either ends with the agent's submit tool (done) or with tool
calls for the workflow to run; in the final turn only the submit tool is offered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from activities.artifacts import ArtifactStore
from activities.llm.agents.answers import converse
from activities.llm.providers.base import Message, ToolCall, ToolResult, ToolSpec
from workflows.contracts.keys import turn_key
from workflows.contracts.tools import MAX_TOOL_CALLS, ToolCallRef, ToolOutcome
from workflows.contracts.usage import LLMCall

# A tool call's arguments travel through the workflow history: keep them small.
MAX_ARGUMENT_CHARS = 1000
# A tool result the model reads back: enough for a reward module or a table, not a dump.
MAX_RESULT_CHARS = 12_000


def dump(messages: list[Message]) -> str:
    """A conversation as JSON, to keep in S3 between an agent's calls (media left out)."""
    # Media is left out: transcripts hold text turns only.
    turns = [
        {
            "role": m.role,
            "content": m.content,
            "tool_calls": [asdict(c) for c in m.tool_calls],
            "tool_results": [asdict(r) for r in m.tool_results],
            "thinking": list(m.thinking),
        }
        for m in messages
    ]
    return json.dumps(turns, indent=1)


def load(text: str) -> list[Message]:
    """A conversation saved by `dump`, to continue it."""
    return [
        Message(
            role=m["role"],
            content=m.get("content", ""),
            tool_calls=tuple(ToolCall(**c) for c in m.get("tool_calls", [])),
            tool_results=tuple(ToolResult(**r) for r in m.get("tool_results", [])),
            thinking=tuple(m.get("thinking", [])),
        )
        for m in json.loads(text)
    ]


def answer_tools(store: ArtifactStore, outcomes: list[ToolOutcome]) -> Message:
    """The tool turn that answers the last assistant turn's calls, read from S3."""
    results = []
    for o in outcomes:
        text = store.get_text(o.key) if o.key else o.summary
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + "\n[... cut: ask for less]"
        results.append(ToolResult(o.call_id, text, is_error=o.is_error, name=o.name))
    return Message(role="tool", tool_results=tuple(results))


def continued(
    store: ArtifactStore, transcript_key: str, outcomes: list[ToolOutcome], final: bool
) -> list[Message]:
    """The conversation so far, with the answers to the model's last tool calls (and, on the
    final call, word that it must submit now)."""
    messages = load(store.get_text(transcript_key))
    messages.append(answer_tools(store, outcomes))
    if final:
        messages.append(Message(role="user", content=tool_budget_note(1, 1)))
    return messages


@dataclass
class Turn:
    """The outcome of one call of a multi-call agent: its submitted answer, or tool calls to run."""

    done: bool
    arguments: dict[str, Any] = field(default_factory=dict)  # the submit tool's, when done
    tool_calls: list[ToolCallRef] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)  # the conversation after this turn
    call: LLMCall | None = None


def take_turn(
    agent: str,
    model: str,
    *,
    system: str,
    messages: list[Message],
    tools: list[ToolSpec],
    submit: ToolSpec,
    final: bool,
    parse: Callable[[dict[str, Any]], Any] = dict,
) -> Turn:
    """One call (more when its answer is repaired): the submitted answer, or the tool calls the
    model made (at most MAX_TOOL_CALLS of them are run; the rest are answered as skipped by the
    workflow)."""
    reply = converse(
        agent,
        model,
        messages,
        system=system,
        submit=submit,
        parse=parse,
        lookups=None if final else tools,
    )
    if reply.lookups:
        refs = [_ref(c) for c in reply.lookups]
        return Turn(done=False, tool_calls=refs, messages=reply.messages, call=reply.call)
    return Turn(done=True, arguments=reply.arguments, call=reply.call)


class ToolRounds(Protocol):
    """What a request to a multi-call agent carries (ReviseRequest, SynthesisRequest)."""

    transcript_key: str | None
    tool_outcomes: list[ToolOutcome]
    round: int
    final: bool


def next_turn(
    store: ArtifactStore,
    req: ToolRounds,
    folder: str,
    opening: Callable[[], str],
    take: Callable[[list[Message], bool], Turn],
) -> tuple[Turn, str | None]:
    """One call of an agent: the first opens with `opening()`, later ones continue the saved
    conversation with the tools' answers. A turn that ends in tool calls is saved under `folder`
    for the next call: (turn, its transcript key), or (turn, None) when done."""
    if req.transcript_key is None:
        messages = [Message(role="user", content=opening())]
    else:
        messages = continued(store, req.transcript_key, req.tool_outcomes, req.final)
    turn = take(messages, req.final)
    if turn.done:
        return turn, None
    return turn, store.put_text(turn_key(folder, req.round), dump(turn.messages))


def _ref(call: ToolCall) -> ToolCallRef:
    args = call.arguments
    if len(json.dumps(args, default=str)) > MAX_ARGUMENT_CHARS:
        args = {"_too_long": True}
    return ToolCallRef(id=call.id, name=call.name, arguments=args)


def tool_budget_note(round_: int, rounds: int) -> str:
    """What to tell the model about the tool rounds it has left (none: submit now)."""
    left = rounds - round_
    if left <= 0:
        return "No more tool calls: submit your answer now."
    return (
        f"You may look things up with the tools for {left} more round(s), at most "
        f"{MAX_TOOL_CALLS} calls per round, before you must submit."
    )
