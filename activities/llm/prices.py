"""Estimated prices of LLM calls: USD per million input and output tokens, by model-name prefix.

The one place to update when providers change their prices. The longest matching prefix wins;
a model with no entry is counted in tokens but reported as unpriced (a budget cap in dollars
cannot see it). Local OpenAI-compatible servers cost nothing per token.
"""

from __future__ import annotations

# prefix -> (input, output) USD per 1M tokens, list prices as published by the providers.
PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4-0": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "gpt-5.2": (1.75, 14.0),
    "gpt-5.1": (1.25, 10.0),
    "gpt-5-nano": (0.05, 0.4),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5": (1.25, 10.0),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-4o": (2.5, 10.0),
    "o4-mini": (1.1, 4.4),
    "o3-mini": (1.1, 4.4),
    "o3": (2.0, 8.0),
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash-lite": (0.1, 0.4),
    "gemini-2.5-flash": (0.3, 2.5),
    "gemini-2.0-flash": (0.1, 0.4),
    "openai-compatible:": (0.0, 0.0),
}


def _matches(model: str, prefix: str) -> bool:
    # A prefix covers the model itself, its dated snapshots and point releases ("-..."), never
    # a different model that merely starts the same ("gpt-5.4" is not "gpt-5").
    if prefix.endswith(":"):
        return model.startswith(prefix)
    return model == prefix or model.startswith(prefix + "-")


def price_of(model: str) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens for a model by its longest matching prefix; None when
    unpriced."""
    matches = [p for p in PRICES if _matches(model, p)]
    return PRICES[max(matches, key=len)] if matches else None


def estimate_cost(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Estimated USD for one call, or None when the model has no price here."""
    price = price_of(model)
    if price is None:
        return None
    return round((input_tokens * price[0] + output_tokens * price[1]) / 1e6, 6)
