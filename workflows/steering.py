"""A person in the loop: what approve, feedback, abort and extend check and change.

`SessionWorkflow` declares the updates and the signals (Temporal finds handlers on the workflow
class only) and hands each to the `Steering` it owns. Updates validate first: an invalid request
is rejected before it reaches the history. Signals (what the Temporal Web UI's signal dialog and
`temporal workflow signal` send) cannot be rejected, so an invalid one is logged and listed in
the session's status, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.contracts.steering import MAX_EXTEND, MAX_FEEDBACK_CHARS, ApprovalDecision

Arg = TypeVar("Arg")


class Steering:
    """What people have sent the session and the run loop has not taken yet, and the checks
    each request passes (`check_*` raise ValueError with a one-line reason)."""

    def __init__(self) -> None:
        self.feedback: list[str] = []
        self.abort_reason: str | None = None
        self.extra_iterations = 0
        # Set while the run loop waits for a person to approve a reward (its iteration).
        self.awaiting_approval: int | None = None
        self.decision: ApprovalDecision | None = None
        self.signal_errors: list[str] = []
        self.ended = False

    # --- checks (raise ValueError with a one-line reason) -------------------------------------

    def _open(self) -> None:
        if self.ended or self.abort_reason is not None:
            raise ValueError("the session has ended or is being aborted")

    def check_approve(self, decision: ApprovalDecision | None) -> None:
        """Only while a reward waits at the gate, and only for the iteration that waits."""
        self._open()
        if self.awaiting_approval is None:
            raise ValueError("no reward is waiting for approval (the session's approval mode is "
                             "'none', or it is not at an approval gate now)")  # fmt: skip
        if decision is not None and decision.iteration not in (None, self.awaiting_approval):
            raise ValueError(
                f"iteration {decision.iteration} is not waiting; "
                f"iteration {self.awaiting_approval} is"
            )

    def check_feedback(self, text: str) -> None:
        """Non-empty text of at most MAX_FEEDBACK_CHARS."""
        self._open()
        if not isinstance(text, str) or not text.strip():
            raise ValueError("feedback is empty; say what the policy should do differently")
        if len(text) > MAX_FEEDBACK_CHARS:
            raise ValueError(f"feedback has {len(text)} characters; at most {MAX_FEEDBACK_CHARS}")

    def check_abort(self, reason: str) -> None:
        """Any reason, while the session still runs."""
        self._open()

    def check_extend(self, iterations: int) -> None:
        """A whole number of iterations from 1 to MAX_EXTEND."""
        self._open()
        if not isinstance(iterations, int) or not 1 <= iterations <= MAX_EXTEND:
            raise ValueError(f"iterations must be a whole number from 1 to {MAX_EXTEND}")

    # --- effects (return the line the sender sees) --------------------------------------------

    def approve(self, decision: ApprovalDecision | None) -> str:
        """Release (or reject) the reward at the gate."""
        self.decision = decision or ApprovalDecision()
        verdict = "approved" if self.decision.approve else "rejected"
        return f"iteration {self.awaiting_approval}: reward {verdict}"

    def give_feedback(self, text: str) -> str:
        """Keep the text for the next revision."""
        self.feedback.append(" ".join(text.split()))
        return f"feedback noted ({len(self.feedback)} waiting for the next revision)"

    def abort(self, reason: str) -> str:
        """Ask the run loop to stop; the workflow cancels what runs and keeps the best so far."""
        self.abort_reason = " ".join((reason or "").split()) or "aborted by a person"
        return "aborting: running activities are cancelled, the best policy so far is kept"

    def extend(self, iterations: int) -> str:
        """Raise the session's iteration limit."""
        self.extra_iterations += iterations
        return f"max_iterations raised by {iterations}"

    def signalled(
        self, name: str, check: Callable[[Arg], None], apply: Callable[[Arg], str], arg: Arg
    ) -> None:
        """A signal: applied when its check passes, else logged and listed in the status."""
        try:
            check(arg)
        except (ValueError, TypeError) as exc:
            message = f"signal {name} ignored: {exc}"
            workflow.logger.warning(message)
            self.signal_errors = [*self.signal_errors[-9:], message]
            return
        apply(arg)

    def take_feedback(self) -> list[str]:
        """The feedback that waited, handed to one revision."""
        taken, self.feedback = self.feedback, []
        return taken
