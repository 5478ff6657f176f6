"""The LLM seam: the provider interface, model-name resolution and the author factory.

This build ships only the offline author (deterministic templates, no network). The provider
interface below is what the real providers (Anthropic, OpenAI, Gemini, any OpenAI-compatible
server) implement in the next issue; the agents will talk to `LLMProvider`, never to an SDK.
API keys are read from the environment only to decide the default; they are never logged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from temporalio.exceptions import ApplicationError

from workflows.models import OFFLINE_LABEL, OFFLINE_MODEL

if TYPE_CHECKING:
    from activities.llm.offline.author import OfflineAuthor

# Provider -> the environment variables that hold its key (any one of them is enough).
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}

# Providers this build can actually call. Empty until the next issue adds them; `default_model`
# only picks a provider from here, so a key in the environment never selects a missing provider.
AVAILABLE_PROVIDERS: dict[str, str] = {}  # provider -> its default model name


# --- the provider interface ---------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call; `input_schema` is a JSON Schema object."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    tool_call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Message:
    """One turn. Assistant turns may carry tool calls; tool turns carry their results."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
        )


@dataclass(frozen=True)
class Completion:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: Literal["end", "tool_use", "max_tokens", "refusal", "other"] = "end"


@runtime_checkable
class LLMProvider(Protocol):
    """Messages in; text and tool calls out, with token usage.

    Implementations map provider errors onto `ApplicationError`: rate limits and 5xx stay
    retryable (Temporal retries the activity), auth and bad-request errors are non-retryable
    with a one-line message saying what to change.
    """

    name: str  # "anthropic", "openai", "gemini", "openai-compatible"
    model: str

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        tools: list[ToolSpec] | None = None,
        max_tokens: int = 4096,
        temperature: float = 0.0,
    ) -> Completion: ...


# --- model names and the author factory ----------------------------------------------------


def _is_offline(name: str) -> bool:
    return name.strip().lower() in (OFFLINE_MODEL, OFFLINE_LABEL.lower())


def resolve_model(name: str) -> str:
    """The canonical model name, or a non-retryable error when this build cannot serve it."""
    if _is_offline(name):
        return OFFLINE_MODEL
    raise ApplicationError(
        f"model {name.strip()!r}: real LLM providers are not yet available in this build; "
        "use --llm offline (llm_model='offline') for the template author",
        type="ProviderUnavailable",
        non_retryable=True,
    )


def model_label(name: str) -> str:
    """What a person sees as the author of the reward ('offline (no LLM)' or the model)."""
    return OFFLINE_LABEL if resolve_model(name) == OFFLINE_MODEL else name


def get_author(name: str) -> OfflineAuthor:
    """The reward author for a model name (only the offline author in this build)."""
    resolve_model(name)
    from activities.llm.offline.author import OfflineAuthor

    return OfflineAuthor()


def keys_present() -> list[str]:
    """Names (never values) of the provider key variables that are set and non-empty."""
    return [
        var for vars_ in PROVIDER_KEYS.values() for var in vars_ if os.environ.get(var, "").strip()
    ]


def default_model() -> str:
    """'offline' when no usable provider key is set; else the first available provider's model."""
    # A key for a provider this build lacks does not count: the session would only fail later.
    for provider, default in AVAILABLE_PROVIDERS.items():
        if any(os.environ.get(v, "").strip() for v in PROVIDER_KEYS[provider]):
            return default
    return OFFLINE_MODEL
