"""The provider-neutral chat interface every agent talks to.

Agents build `Message`s and `ToolSpec`s and read `Completion`s; each provider module maps these
onto its SDK. Keys are read by the provider from the environment inside the worker, never passed
in workflow payloads, never logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call; `input_schema` is a JSON Schema object."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made, with its parsed arguments."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """Our answer to one of the model's tool calls, sent back in a tool turn."""

    tool_call_id: str
    content: str
    is_error: bool = False
    name: str = ""  # the tool's name (Gemini matches results by name, not id)


@dataclass(frozen=True)
class Media:
    """An image or video attached to a user turn (e.g. image/png, video/mp4)."""

    mime_type: str
    data: bytes
    # Text put right before this item (e.g. "t = 1.50 s"): a frame's time travels beside it.
    caption: str = ""

    @property
    def kind(self) -> Literal["image", "video"]:
        return "video" if self.mime_type.startswith("video/") else "image"


@dataclass(frozen=True)
class Message:
    """One turn. Assistant turns may carry tool calls; tool turns carry their results."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    media: tuple[Media, ...] = ()
    # An assistant turn's reasoning blocks as the provider sent them (opaque, signed), echoed
    # back so that a conversation that goes on after tool calls may think again.
    thinking: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Usage:
    """Tokens one call used; input_tokens excludes cache reads, so the fields never overlap."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0


StopReason = Literal["end", "tool_use", "max_tokens", "refusal", "other"]


@dataclass(frozen=True)
class Completion:
    """A provider's reply in one shape: text, tool calls, usage and why it stopped."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: StopReason = "end"
    thinking: tuple[dict[str, Any], ...] = ()  # the reasoning blocks to echo back (Anthropic)
    # What was asked but not sent or not honoured (a sampling setting this model rejects,
    # thinking skipped): reported on the call's accounting so a person sees it.
    notes: tuple[str, ...] = ()


# Tokens of reasoning an authoring agent may spend before it answers, where the provider takes
# a budget (Anthropic's manual thinking); max_tokens grows by as much so the answer keeps room.
THINKING_BUDGET = 8192


@runtime_checkable
class LLMProvider(Protocol):
    """Messages in; text and tool calls out, with token usage.

    Implementations turn provider errors into `ApplicationError`s (see `errors.py`): rate limits,
    5xx, timeouts and connection failures stay retryable, honouring Retry-After through
    `next_retry_delay`; auth and invalid-request errors are non-retryable and carry the
    provider's message. SDK-internal retries are off: Temporal retries the activity.
    """

    name: str  # "anthropic", "openai", "gemini", "openai-compatible"
    model: str
    accepts_media: frozenset[str]  # {"image"}, {"image", "video"} or empty

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        tools: list[ToolSpec] | None = None,
        max_tokens: int = 4096,
        temperature: float | None = 0.0,
        thinking: bool = False,  # reason before answering, where the model offers it
    ) -> Completion: ...
