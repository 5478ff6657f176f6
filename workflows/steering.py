"""A person in the loop: approve, feedback, abort, extend, as updates and as signals.

Updates validate first: an invalid request is rejected before it reaches the history. Signals
(what the Temporal Web UI's signal dialog and `temporal workflow signal` send) cannot be
rejected, so an invalid one is logged and listed in the session's status, never raised.
`SessionWorkflow` derives from `Steering`; the run loop reads the state kept here.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.contracts.steering import MAX_EXTEND, MAX_FEEDBACK_CHARS, ApprovalDecision


class Steering:
    def __init__(self) -> None:
        self._feedback: list[str] = []
        self._abort_reason: str | None = None
        self._extra_iterations = 0
        # Set while the run loop waits for a person to approve a reward (its iteration).
        self._awaiting_approval: int | None = None
        self._decision: ApprovalDecision | None = None
        self._signal_errors: list[str] = []
        self._ended = False

    # --- validation (raises ValueError with a one-line reason) ------------------------------

    def _open(self) -> None:
        if self._ended or self._abort_reason is not None:
            raise ValueError("the session has ended or is being aborted")

    def _check_approve(self, decision: ApprovalDecision | None) -> None:
        self._open()
        if self._awaiting_approval is None:
            raise ValueError("no reward is waiting for approval (the session's approval mode is "
                             "'none', or it is not at an approval gate now)")  # fmt: skip
        if decision is not None and decision.iteration not in (None, self._awaiting_approval):
            raise ValueError(
                f"iteration {decision.iteration} is not waiting; "
                f"iteration {self._awaiting_approval} is"
            )

    def _check_feedback(self, text: str) -> None:
        self._open()
        if not isinstance(text, str) or not text.strip():
            raise ValueError("feedback is empty; say what the policy should do differently")
        if len(text) > MAX_FEEDBACK_CHARS:
            raise ValueError(f"feedback has {len(text)} characters; at most {MAX_FEEDBACK_CHARS}")

    def _check_abort(self, reason: str) -> None:
        self._open()

    def _check_extend(self, iterations: int) -> None:
        self._open()
        if not isinstance(iterations, int) or not 1 <= iterations <= MAX_EXTEND:
            raise ValueError(f"iterations must be a whole number from 1 to {MAX_EXTEND}")

    # --- effects ------------------------------------------------------------------------------

    def _apply_approve(self, decision: ApprovalDecision | None) -> str:
        self._decision = decision or ApprovalDecision()
        verdict = "approved" if self._decision.approve else "rejected"
        return f"iteration {self._awaiting_approval}: reward {verdict}"

    def _apply_feedback(self, text: str) -> str:
        self._feedback.append(" ".join(text.split()))
        return f"feedback noted ({len(self._feedback)} waiting for the next revision)"

    def _apply_abort(self, reason: str) -> str:
        self._abort_reason = " ".join((reason or "").split()) or "aborted by a person"
        return "aborting: running activities are cancelled, the best policy so far is kept"

    def _apply_extend(self, iterations: int) -> str:
        self._extra_iterations += iterations
        return f"max_iterations raised by {iterations}"

    # --- updates ------------------------------------------------------------------------------

    @workflow.update
    async def approve_reward(self, decision: ApprovalDecision | None = None) -> str:
        return self._apply_approve(decision)

    @approve_reward.validator
    def _validate_approve_reward(self, decision: ApprovalDecision | None = None) -> None:
        self._check_approve(decision)

    @workflow.update
    async def give_feedback(self, text: str) -> str:
        return self._apply_feedback(text)

    @give_feedback.validator
    def _validate_give_feedback(self, text: str) -> None:
        self._check_feedback(text)

    @workflow.update
    async def abort(self, reason: str = "") -> str:
        return self._apply_abort(reason)

    @abort.validator
    def _validate_abort(self, reason: str = "") -> None:
        self._check_abort(reason)

    @workflow.update
    async def extend(self, iterations: int) -> str:
        return self._apply_extend(iterations)

    @extend.validator
    def _validate_extend(self, iterations: int) -> None:
        self._check_extend(iterations)

    # --- the same as signals --------------------------------------------------------------------

    def _signalled(self, name: str, check, apply, arg) -> None:  # noqa: ANN001
        try:
            check(arg)
        except (ValueError, TypeError) as exc:
            message = f"signal {name} ignored: {exc}"
            workflow.logger.warning(message)
            self._signal_errors = [*self._signal_errors[-9:], message]
            return
        apply(arg)

    @workflow.signal(name="approve")
    def approve_signal(self, decision: ApprovalDecision | None = None) -> None:
        self._signalled("approve", self._check_approve, self._apply_approve, decision)

    @workflow.signal(name="feedback")
    def feedback_signal(self, text: str) -> None:
        self._signalled("feedback", self._check_feedback, self._apply_feedback, text)

    @workflow.signal(name="abort")
    def abort_signal(self, reason: str = "") -> None:
        self._signalled("abort", self._check_abort, self._apply_abort, reason)

    @workflow.signal(name="extend")
    def extend_signal(self, iterations: int) -> None:
        self._signalled("extend", self._check_extend, self._apply_extend, iterations)

    def _take_feedback(self) -> list[str]:
        taken, self._feedback = self._feedback, []
        return taken
