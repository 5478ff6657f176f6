"""What a person sends a running session: approve (an `ApprovalDecision`), feedback (text),
abort (a reason) and extend (a number of iterations), with the limits the workflow checks.

Each goes as an update (validated first: an invalid one is rejected) or as a signal of the same
name (workflows/steering.py).
"""

from __future__ import annotations

from workflows.contracts.context import UserInput

MAX_FEEDBACK_CHARS = 2000  # one feedback text
MAX_EXTEND = 20  # iterations one extend adds


class ApprovalDecision(UserInput):
    """What a person answers at an approval gate (`approve_reward` update or `approve` signal)."""

    approve: bool = True
    note: str = ""
    iteration: int | None = None  # the iteration being approved (None: whichever waits)
