"""LLM spend and training time of a session, and the caps that end it (workflow-safe)."""

from __future__ import annotations

from datetime import datetime

from workflows.contracts.session import SessionInput
from workflows.contracts.usage import LLMCall, LLMUsage


class BudgetExhausted(Exception):
    """A cap was reached: the session ends with status budget_exhausted, keeping its best."""


class Accounting:
    """The session's and the current iteration's LLM spend and training time, checked
    against the session's caps between stages (`BudgetExhausted` ends the session)."""

    def __init__(self, inp: SessionInput) -> None:
        self.inp = inp
        self.session = LLMUsage()
        self.iteration = LLMUsage()
        # The dearest single call so far (the next call's likely cost), and what the calls in
        # flight are expected to cost: a call starts only when both fit under the cap.
        self.dearest_call = 0.0
        self.in_flight = 0.0
        self.training_seconds = 0.0
        self.iteration_training_seconds = 0.0
        # When each training call now in flight started (workflow time): what the status shows
        # as training under way, and what a cancelled or failed call is charged from.
        self.training_started: list[datetime] = []

    def new_iteration(self) -> None:
        self.iteration = LLMUsage()
        self.iteration_training_seconds = 0.0

    def llm(self, call: LLMCall | None) -> None:
        self.session = self.session.add(call)
        self.iteration = self.iteration.add(call)
        if call is not None and call.cost_usd is not None:
            self.dearest_call = max(self.dearest_call, call.cost_usd / max(call.calls, 1))

    def left_usd(self) -> float | None:
        """What the cap leaves for the next call (None: no cap)."""
        cap = self.inp.max_llm_cost_usd
        return None if cap is None else max(0.0, cap - self.session.cost_usd - self.in_flight)

    def before_call(self, agent: str) -> float:
        """Raise BudgetExhausted when the next call's likely cost (the dearest call so far)
        would pass the cap on top of what is spent and in flight; else reserve it."""
        left = self.left_usd()
        likely = self.dearest_call
        if left is not None and (left <= 0 or likely > left):
            cap = self.inp.max_llm_cost_usd
            raise BudgetExhausted(
                f"LLM spend ${self.session.cost_usd:.4f} and the next call ({agent}, likely "
                f"${likely:.4f}) would pass the cap of ${cap:.4f} (max_llm_cost_usd)"
            )
        self.in_flight += likely
        return likely

    def after_call(self, reserved: float) -> None:
        self.in_flight = max(0.0, self.in_flight - reserved)

    def training(self, seconds: float) -> None:
        self.training_seconds += seconds
        self.iteration_training_seconds += seconds

    def training_began(self, at: datetime) -> None:
        self.training_started.append(at)

    def training_ended(self, began: datetime, seconds: float | None) -> None:
        """A training call ended: its wall seconds (None: not charged) added to the spend."""
        self.training_started.remove(began)
        if seconds is not None:
            self.training(seconds)

    def training_seconds_for(self, iteration: int) -> float | None:
        """An iteration's share of the training time left (None: no time budget): the rest of
        max_training_minutes over the iterations still to come, this one included."""
        minutes = self.inp.max_training_minutes
        if minutes is None:
            return None
        left = max(1, self.inp.max_iterations - iteration + 1)
        return max(1.0, (minutes * 60 - self.training_seconds) / left)

    def check(self) -> None:
        """Raise BudgetExhausted when a cap is reached; called between stages."""
        cap = self.inp.max_llm_cost_usd
        if cap is not None and self.session.cost_usd >= cap:
            raise BudgetExhausted(
                f"LLM spend ${self.session.cost_usd:.4f} reached the cap of ${cap:.4f} "
                "(max_llm_cost_usd)"
            )
        minutes = self.inp.max_training_minutes
        if minutes is not None and self.training_seconds >= minutes * 60:
            raise BudgetExhausted(
                f"training time {self.training_seconds / 60:.1f} min reached the cap of "
                f"{minutes:g} min (max_training_minutes)"
            )
