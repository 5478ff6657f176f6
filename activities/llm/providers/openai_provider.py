"""OpenAI Chat Completions behind `LLMProvider`; also any OpenAI-compatible server.

Chat Completions (not the Responses API) because vLLM, Ollama and llama.cpp all serve it, so one
mapping covers OpenAI and local servers.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import openai

from activities.llm.providers.base import (
    Completion,
    Message,
    StopReason,
    ToolCall,
    ToolSpec,
    Usage,
)
from activities.llm.providers.errors import reject_unsupported_media, translate_errors

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

# Reasoning models reject any temperature but the default.
_NO_TEMPERATURE_PREFIXES = ("o1", "o3", "o4", "gpt-5")

_STOP: dict[str, StopReason] = {
    "stop": "end",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class OpenAIProvider:
    """OpenAI models, or any OpenAI-compatible server (vLLM, Ollama, llama.cpp), via Chat
    Completions."""

    accepts_media: frozenset[str] = frozenset({"image"})

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None,
        timeout_s: float,
        *,
        compatible: bool,
        key_vars: tuple[str, ...],
    ) -> None:
        self.name = "openai-compatible" if compatible else "openai"
        self.model = model
        self._compatible = compatible
        self._key = api_key
        self._key_vars = key_vars
        # max_retries=0: Temporal owns retries (and their backoff, honouring Retry-After).
        self._client = openai.OpenAI(
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
        """One Chat Completions call; SDK errors become ApplicationErrors Temporal can act on."""
        reject_unsupported_media(self.name, self.accepts_media, messages)
        kwargs: dict[str, Any] = {}
        notes: list[str] = []
        if tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                }
                for t in tools
            ]
        if self._compatible:
            # vLLM, Ollama and llama.cpp all know max_tokens; not all know the newer name.
            kwargs["max_tokens"] = max_tokens
        else:
            # OpenAI's reasoning models reject max_tokens; max_completion_tokens works for all.
            kwargs["max_completion_tokens"] = max_tokens
        reasoning = not self._compatible and self.model.startswith(_NO_TEMPERATURE_PREFIXES)
        if temperature is not None and reasoning:
            notes.append(f"temperature {temperature:g} not sent: {self.model} rejects it")
        elif temperature is not None:
            kwargs["temperature"] = temperature
        if thinking and reasoning:
            # gpt-5.1 reasons not at all by default ("none"); the o-series default to medium.
            kwargs["reasoning_effort"] = "medium"
        with translate_errors(self.name, self.model, self._key_vars, self._key):
            # Plain dicts in the API's wire shape; the SDK's TypedDicts only describe it.
            wire = cast("list[ChatCompletionMessageParam]", to_openai_messages(messages, system))
            reply = self._client.chat.completions.create(model=self.model, messages=wire, **kwargs)
        completion = _completion(reply)
        return replace(completion, notes=tuple(notes)) if notes else completion


def to_openai_messages(messages: list[Message], system: str | None) -> list[dict[str, Any]]:
    """Our turns as Chat Completions messages: the system prompt first, one message per tool
    result."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role == "tool":
            out += [
                {
                    "role": "tool",
                    "tool_call_id": r.tool_call_id,
                    "content": _error_text(r.content) if r.is_error else r.content,
                }
                for r in m.tool_results
            ]
        elif m.role == "assistant":
            if not m.content and not m.tool_calls:
                continue  # the API rejects an assistant turn with neither
            msg: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in m.tool_calls
                ]
            out.append(msg)
        elif m.media:
            parts: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
            for media in m.media:
                if media.caption:  # a frame's time, right before the frame
                    parts.append({"type": "text", "text": media.caption})
                url = _data_url(media.mime_type, media.data)
                parts.append({"type": "image_url", "image_url": {"url": url}})
            out.append({"role": "user", "content": parts})
        else:
            out.append({"role": "user", "content": m.content})
    return out


def _data_url(mime_type: str, data: bytes) -> str:
    return f"data:{mime_type};base64,{base64.b64encode(data).decode('ascii')}"


def _arguments(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        # Keep the text so the agent can tell the model its arguments were not JSON.
        return {"_unparsed_arguments": raw}
    return value if isinstance(value, dict) else {"value": value}


def _completion(reply: Any) -> Completion:
    if not reply.choices:
        return Completion(text="", model=reply.model or "", stop_reason="other")
    choice = reply.choices[0]
    msg = choice.message
    calls = tuple(
        ToolCall(id=c.id, name=c.function.name, arguments=_arguments(c.function.arguments))
        for c in (msg.tool_calls or [])
        if c.type == "function"
    )
    refusal = getattr(msg, "refusal", None)
    if calls:
        stop: StopReason = "tool_use"  # some local servers say "stop" even when calling tools
    elif refusal:
        stop = "refusal"
    else:
        stop = _STOP.get(choice.finish_reason or "", "other")
    return Completion(
        text=msg.content or refusal or "",
        tool_calls=calls,
        usage=_usage(reply.usage),
        model=reply.model or "",
        stop_reason=stop,
    )


def _usage(u: Any) -> Usage:
    if u is None:
        return Usage()
    details = u.prompt_tokens_details
    cached = (details.cached_tokens if details is not None else 0) or 0
    return Usage(
        # prompt_tokens includes cached ones; split them so the fields never overlap.
        input_tokens=(u.prompt_tokens or 0) - cached,
        output_tokens=u.completion_tokens or 0,
        cache_read_tokens=cached,
    )


def _error_text(content: str) -> str:
    """OpenAI's tool messages have no error flag: say it in the text, once."""
    return content if content.lower().startswith("error") else f"Error: {content}"
