"""Model name -> provider: routing rules, key and base-URL variables, the provider factory.

Keys and base URLs are read from the worker's environment here and nowhere else; a key is never
put in a message. Base-URL variables let a proxy or the tests' fake server stand in for a vendor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from temporalio.exceptions import ApplicationError

from activities.llm.providers.base import LLMProvider
from activities.llm.providers.errors import AUTH_ERROR
from workflows.contracts import timeouts
from workflows.contracts.context import OFFLINE_MODEL as OFFLINE

COMPATIBLE_PREFIX = "openai-compatible:"
COMPATIBLE_BASE_URL_VAR = "POLICYFORGE_OPENAI_BASE_URL"
COMPATIBLE_KEY_VAR = "POLICYFORGE_OPENAI_API_KEY"
COMPATIBLE_PLACEHOLDER_KEY = "not-needed"  # local servers ignore it; the SDK insists on one
TIMEOUT_VAR = "POLICYFORGE_LLM_TIMEOUT_S"
MODEL_VAR = "POLICYFORGE_LLM_MODEL"
DEFAULT_TIMEOUT_S = 300.0
# A request must end inside its activity's start-to-close (6 min), with time left to report.
MAX_TIMEOUT_S = timeouts.LLM.inner.total_seconds()

# Order matters: default_model() picks the first provider whose key is set.
DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5.1",
    "gemini": "gemini-2.5-pro",
}
KEY_VARS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openai-compatible": (COMPATIBLE_KEY_VAR,),
}
BASE_URL_VARS: dict[str, str] = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "gemini": "GOOGLE_GEMINI_BASE_URL",
    "openai-compatible": COMPATIBLE_BASE_URL_VAR,
}


@dataclass(frozen=True)
class ProviderChoice:
    """Which provider serves a model name, and which variables hold its key and base URL."""

    provider: str  # "anthropic", "openai", "gemini" or "openai-compatible"
    model: str  # the name the provider knows (without the "openai-compatible:" prefix)
    key_vars: tuple[str, ...]
    base_url_var: str


def _invalid(message: str) -> ApplicationError:
    return ApplicationError(message, type="InvalidInput", non_retryable=True)


def _env(var: str) -> str | None:
    value = os.environ.get(var, "").strip()
    return value or None


def _provider_of(name: str) -> str | None:
    lower = name.lower()
    if lower.startswith("claude-"):
        return "anthropic"
    if lower.startswith(("gpt-", "o1", "o3", "o4")):
        return "openai"
    if lower.startswith("gemini"):
        return "gemini"
    return None


def resolve(model_name: str) -> ProviderChoice:
    """Which provider serves `model_name`; a non-retryable InvalidInput error when none does."""
    name = model_name.strip()
    if name.lower().startswith(COMPATIBLE_PREFIX):
        model = name[len(COMPATIBLE_PREFIX) :].strip()  # may contain ':' (e.g. llama3.1:8b)
        if not model:
            raise _invalid("llm_model: 'openai-compatible:' needs a model name after the colon")
        if _env(COMPATIBLE_BASE_URL_VAR) is None:
            raise _invalid(
                f"llm_model {name!r}: set {COMPATIBLE_BASE_URL_VAR} to the server's base URL "
                "(e.g. http://localhost:8000/v1)"
            )
        return _choice("openai-compatible", model)
    provider = _provider_of(name)
    if provider is None:
        if name.lower() == OFFLINE:
            raise _invalid("llm_model 'offline' is the template author, not an LLM provider")
        raise _invalid(
            f"llm_model: unknown model {name!r}; use a claude-*, gpt-*/o*, gemini* model, "
            "openai-compatible:<model>, or offline"
        )
    return _choice(provider, name)


def _choice(provider: str, model: str) -> ProviderChoice:
    return ProviderChoice(provider, model, KEY_VARS[provider], BASE_URL_VARS[provider])


def _key(choice: ProviderChoice) -> str | None:
    return next((v for var in choice.key_vars if (v := _env(var))), None)


def missing_key(model_name: str) -> str | None:
    """None when the model's key is set (or it needs none); else a one-line 'set X' message."""
    if model_name.strip().lower() == OFFLINE:
        return None
    return _missing_key(resolve(model_name), model_name)


def _missing_key(choice: ProviderChoice, model_name: str) -> str | None:
    if choice.provider == "openai-compatible" or _key(choice) is not None:
        return None
    return f"set {' or '.join(choice.key_vars)} to use {model_name.strip()} ({choice.provider})"


def timeout_s() -> float:
    """Seconds per provider call from POLICYFORGE_LLM_TIMEOUT_S, else the default; at most
    MAX_TIMEOUT_S, so that a slow provider fails as LLMTimeout, not as the activity's timeout."""
    raw = _env(TIMEOUT_VAR)
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise _invalid(f"{TIMEOUT_VAR} must be a positive number of seconds, not {raw!r}")
    if value > MAX_TIMEOUT_S:
        limit = timeouts.LLM.start_to_close.total_seconds()
        raise _invalid(
            f"{TIMEOUT_VAR}={raw} is longer than an LLM activity may take: at most "
            f"{MAX_TIMEOUT_S:.0f} s (the activities' start-to-close timeout is {limit:.0f} s)"
        )
    return value


def make_provider(model_name: str) -> LLMProvider:
    """The provider for `model_name`, configured from the environment."""
    choice = resolve(model_name)
    missing = _missing_key(choice, model_name)
    if missing:
        raise ApplicationError(missing, type=AUTH_ERROR, non_retryable=True)
    key = _key(choice) or COMPATIBLE_PLACEHOLDER_KEY
    base_url = _env(choice.base_url_var)
    timeout = timeout_s()
    if choice.provider == "anthropic":
        from activities.llm.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(choice.model, key, base_url, timeout, key_vars=choice.key_vars)
    if choice.provider == "gemini":
        from activities.llm.providers.gemini_provider import GeminiProvider

        return GeminiProvider(choice.model, key, base_url, timeout, key_vars=choice.key_vars)
    from activities.llm.providers.openai_provider import OpenAIProvider

    return OpenAIProvider(
        choice.model,
        key,
        base_url,
        timeout,
        compatible=choice.provider == "openai-compatible",
        key_vars=choice.key_vars,
    )


def default_model() -> str:
    """POLICYFORGE_LLM_MODEL, else the first provider with a key set, else 'offline'."""
    explicit = _env(MODEL_VAR)
    if explicit:
        return explicit
    for provider, model in DEFAULT_MODELS.items():
        if any(_env(var) for var in KEY_VARS[provider]):
            return model
    return OFFLINE
