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
    # Calls this record sums: an answer repaired in the same conversation is several paid
    # calls, all of them counted (an old history's records are one call each).
    calls: int = 1


def merged_calls(calls: list[LLMCall]) -> LLMCall:
    """One record for an agent's calls on one answer (tokens, latency and cost summed; the
    cost unknown when any call's is)."""
    first = calls[0]
    costs = [c.cost_usd for c in calls]
    return LLMCall(
        agent=first.agent,
        model=first.model,
        input_tokens=sum(c.input_tokens for c in calls),
        output_tokens=sum(c.output_tokens for c in calls),
        latency_s=round(sum(c.latency_s for c in calls), 3),
        cost_usd=None if None in costs else round(sum(c or 0.0 for c in costs), 6),
        notes=list(dict.fromkeys(n for c in calls for n in c.notes)),
        calls=sum(c.calls for c in calls),
    )


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
            calls=self.calls + call.calls,
            input_tokens=self.input_tokens + call.input_tokens,
            output_tokens=self.output_tokens + call.output_tokens,
            cost_usd=round(self.cost_usd + (call.cost_usd or 0.0), 6),
            unpriced_calls=self.unpriced_calls + (call.calls if call.cost_usd is None else 0),
        )
