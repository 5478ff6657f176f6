"""Estimated prices of LLM calls: USD per million input and output tokens, by model-name prefix.

The one place to update when providers change their prices. The longest matching prefix wins;
a model with no entry is counted in tokens but reported as unpriced (a budget cap in dollars
cannot see it). Local OpenAI-compatible servers cost nothing per token.
"""

from __future__ import annotations

# prefix -> (input, output) USD per 1M tokens, list prices as published by the providers.
PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
    "claude-3-7-sonnet": (3.0, 15.0),
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
    "o1": (15.0, 60.0),
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash-lite": (0.1, 0.4),
    "gemini-2.5-flash": (0.3, 2.5),
    "gemini-2.0-flash": (0.1, 0.4),
    "openai-compatible:": (0.0, 0.0),
}


def price_of(model: str) -> tuple[float, float] | None:
    matches = [p for p in PRICES if model.startswith(p)]
    return PRICES[max(matches, key=len)] if matches else None


def estimate_cost(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Estimated USD for one call, or None when the model has no price here."""
    price = price_of(model)
    if price is None:
        return None
    return round((input_tokens * price[0] + output_tokens * price[1]) / 1e6, 6)
