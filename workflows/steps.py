"""The activity calls of a session, one method per step, for `SessionWorkflow`: the steps on
generated code (`step_code.py`), the conversations with a model (`step_talks.py`) and the
training and judging (`step_runs.py`), on the calls they share (`step_base.py`)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.step_code import CodeSteps
    from workflows.step_runs import RunSteps
    from workflows.step_talks import TalkSteps


class Steps(CodeSteps, TalkSteps, RunSteps):
    """The session's activity calls; each reads the session's input and state."""
