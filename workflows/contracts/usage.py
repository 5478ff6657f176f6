"""What LLM calls cost: one call's accounting, and the sums over an iteration or a session.

Every result of an activity that called a model carries an `LLMCall`; the workflow sums them
into `LLMUsage` (workflows/accounting.py) to report costs and enforce the session's budget.
"""

from __future__ import annotations

from pydantic import Field

from workflows.contracts.context import Contract


class LLMCall(Contract):
    """One LLM call's accounting: tokens, latency and estimated cost (None: unknown price)."""

    agent: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None
    # What the provider did not send or honour (a sampling setting the model rejects, thinking
    # skipped), so that nothing asked for is dropped silently.
    notes: list[str] = Field(default_factory=list)


class LLMUsage(Contract):
    """LLM calls summed over an iteration or a session."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # Calls to models without a price in activities/llm/prices.py: their cost is not counted.
    unpriced_calls: int = 0

    def add(self, call: LLMCall | None) -> LLMUsage:
        if call is None:
            return self
        return LLMUsage(
            calls=self.calls + 1,
            input_tokens=self.input_tokens + call.input_tokens,
            output_tokens=self.output_tokens + call.output_tokens,
            cost_usd=round(self.cost_usd + (call.cost_usd or 0.0), 6),
            unpriced_calls=self.unpriced_calls + (call.cost_usd is None),
        )
