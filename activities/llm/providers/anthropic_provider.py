"""Anthropic Messages API behind `LLMProvider`.

The SDK (2.x) sends `anthropic-version: 2026-10-21` and the key as `Authorization: Bearer`.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any, cast

import anthropic

from activities.llm.providers.base import (
    THINKING_BUDGET,
    Completion,
    Message,
    StopReason,
    ToolCall,
    ToolSpec,
    Usage,
)
from activities.llm.providers.errors import reject_unsupported_media, translate_errors

if TYPE_CHECKING:
    from anthropic.types import MessageParam

_STOP: dict[str, StopReason] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}


class AnthropicProvider:
    """Claude models through the Messages API; takes images, not video."""

    name = "anthropic"
    accepts_media: frozenset[str] = frozenset({"image"})

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None,
        timeout_s: float,
        *,
        key_vars: tuple[str, ...],
    ) -> None:
        self.model = model
        self._key = api_key
        self._key_vars = key_vars
        # max_retries=0: Temporal owns retries (and their backoff, honouring Retry-After).
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0
        )

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        tools: list[ToolSpec] | None = None,
        max_tokens: int = 4096,
        temperature: float | None = 0.0,
        thinking: bool = False,
    ) -> Completion:
        """One Messages API call; SDK errors become ApplicationErrors Temporal can act on."""
        reject_unsupported_media(self.name, self.accepts_media, messages)
        kwargs: dict[str, Any] = {}
        notes: list[str] = []
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        # API version 2026-10-21 (sent by this SDK major) rejects temperature/top_p/top_k with a
        # 400, even at their defaults: not sent, and said so on the call's record.
        if temperature is not None:
            notes.append(f"temperature {temperature:g} not sent: this Anthropic API rejects it")
        if thinking:
            config, why_not = thinking_config(self.model, messages)
            if config is not None:
                # Tool choice stays "auto" (never sent): manual thinking rejects forced tool use.
                kwargs["thinking"] = config
                max_tokens += THINKING_BUDGET
            else:
                notes.append(f"thinking off: {why_not}")
        with translate_errors(self.name, self.model, self._key_vars, self._key):
            reply = self._client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                # Plain dicts in the API's wire shape; the SDK's TypedDicts only describe it.
                messages=cast("list[MessageParam]", to_anthropic_messages(messages)),
                **kwargs,
            )
        return _completion(reply, tuple(notes))


def claude_version(model: str) -> tuple[int, int] | None:
    """(major, minor) from a Claude model id, numbers after the family (claude-sonnet-4-6) or
    before it (claude-3-7-sonnet-20250219); a trailing 8-digit date is not a version."""
    numbers = [int(n) for n in re.findall(r"(?<=-)\d+(?=-|$)", model) if len(n) < 8]
    return (numbers[0], numbers[1] if len(numbers) > 1 else 0) if numbers else None


def thinking_config(model: str, messages: list[Message]) -> tuple[dict[str, Any] | None, str]:
    """The `thinking` parameter for this model and conversation, or (None, why not)."""
    if any(m.role == "assistant" and m.tool_calls and not m.thinking for m in messages):
        # A tool loop that thinks must echo every turn's thinking blocks back: a transcript
        # from a call that did not think (or from before they were kept) cannot.
        return None, "this call continues a tool loop whose earlier turns did not think"
    version = claude_version(model)
    if version is not None and version < (3, 7):
        return None, f"{model} has no extended thinking"
    if version is not None and version >= (4, 6):
        # Claude 4.6 and later size their own thinking; the newest reject a token budget.
        return {"type": "adaptive"}, ""
    return {"type": "enabled", "budget_tokens": THINKING_BUDGET}, ""


def to_anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Our turns as Anthropic turns; tool results are user turns, consecutive roles merged."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = "assistant" if m.role == "assistant" else "user"
        blocks = _blocks(m)
        if not blocks:
            continue  # the API rejects empty content
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {
            "type": "tool_result",
            "tool_use_id": r.tool_call_id,
            "content": r.content,
            "is_error": r.is_error,
        }
        for r in m.tool_results
    ]
    # Images before the text that refers to them, as Anthropic recommends; a caption (a
    # frame's time) goes right before its image.
    for media in m.media:
        if media.caption:
            blocks.append({"type": "text", "text": media.caption})
        blocks.append(
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": media.mime_type,
                    "data": base64.b64encode(media.data).decode("ascii"),
                },
            }
        )
    if m.role == "assistant":
        # Reasoning first, as the API sent it (signed): required before a tool call it led to.
        blocks = [dict(b) for b in m.thinking] + blocks
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls
    ]
    return blocks


def _completion(reply: Any, notes: tuple[str, ...] = ()) -> Completion:
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[dict[str, Any]] = []
    for block in reply.content:
        if block.type in ("thinking", "redacted_thinking"):
            thinking.append(block.model_dump(exclude_none=True))
        elif block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            args = block.input if isinstance(block.input, dict) else {"input": block.input}
            calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(args)))
    u = reply.usage
    usage = Usage(
        # input_tokens excludes cache reads (as Anthropic reports it); cache writes are input.
        input_tokens=(u.input_tokens or 0) + (u.cache_creation_input_tokens or 0),
        output_tokens=u.output_tokens or 0,
        cache_read_tokens=u.cache_read_input_tokens or 0,
    )
    return Completion(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=usage,
        model=reply.model or "",
        stop_reason=_STOP.get(reply.stop_reason or "", "other"),
        notes=notes,
        thinking=tuple(thinking),
    )
