"""Lessons across sessions: what a finished session hands to `record_lesson`.

A lesson is one markdown page per environment and behaviour in S3 (`lessons/<env>/<key>.md`,
see activities/lessons.py): what worked and what failed in every session on that intent, which
the authors and revisers of later sessions read before they write.
"""

from __future__ import annotations

from pydantic import Field

from workflows.contracts.context import SessionContext
from workflows.contracts.session import IterationEvidence, IterationRecord


class LessonRequest(SessionContext):
    """A finished session's records: its outcome, every iteration, and the best iteration's
    reward with its training and judgment."""

    status: str  # passed, not_passed, budget_exhausted
    iterations: list[IterationRecord] = Field(default_factory=list)
    best: IterationEvidence | None = None
    total_timesteps: int
    algo: str = "ppo"
