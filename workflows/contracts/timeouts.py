"""Every activity's deadlines, in one table both sides read.

The workflow schedules each activity with its `Deadline` (workflows/steps.py); the activity
keeps its own inner limits (the child process it runs, one provider request) inside
`Deadline.inner`, strictly shorter than the start-to-close timeout. So each failure surfaces as
the error that names it ("validate did not finish within 150s", "anthropic did not answer in
time") rather than as a bare activity timeout, and the activity still has time to report it.
`tests/activities/test_timeouts.py` checks inner < outer for every activity.

Light (the contracts and the standard library): the workflow sandbox imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from workflows.contracts import activities

# Activities that heartbeat do so this often (a timer, independent of the work's progress) ...
HEARTBEAT_EVERY = timedelta(seconds=10)
# ... and are scheduled with this heartbeat timeout: a worker that died is noticed this soon,
# and the retry resumes from the checkpoint in the last heartbeat.
HEARTBEAT = timedelta(seconds=30)


@dataclass(frozen=True)
class Deadline:
    """One activity's timeouts as the workflow schedules it (`heartbeat` None: it does not
    heartbeat), and how much of its start-to-close its own work around the inner limit needs
    (S3 downloads and uploads, starting a process)."""

    start_to_close: timedelta
    heartbeat: timedelta | None = None
    reserve: timedelta = timedelta(seconds=30)

    @property
    def inner(self) -> timedelta:
        """The longest an inner limit of the activity (a child process, a provider request)
        may be."""
        return self.start_to_close - self.reserve


# One LLM call per activity: the provider request (POLICYFORGE_LLM_TIMEOUT_S, default 300 s)
# must end within `inner`. The llm pool beats while the call runs (workers/pools/heartbeats.py),
# so a worker that died mid-call (the video judge watching) is retried within a minute.
LLM = Deadline(timedelta(minutes=6), HEARTBEAT)
# Reward or judge code on random-action steps, in a child (sandbox start-up included).
VALIDATE = Deadline(timedelta(minutes=3), HEARTBEAT)
# One deterministic episode with its video, in a child; the video upload comes after.
EVALUATE = Deadline(timedelta(minutes=10), HEARTBEAT, reserve=timedelta(minutes=1))
# The judge code in a child (or the built-in metrics in-process) on the episode and the
# evaluation-checkpoint episodes; it heartbeats, so a judge worker that died is noticed in 30 s.
JUDGE = Deadline(timedelta(minutes=5), HEARTBEAT)
# A read-only tool an agent called (S3 reads and numpy; no child, no inner limit).
SESSION_TOOL = Deadline(timedelta(minutes=2))
# One small object put to S3 (a benchmark's result, a lesson page).
STORE = Deadline(timedelta(minutes=1))


def train(timesteps: int) -> Deadline:
    """The training activity's deadlines: a generous start-to-close (a slow laptop does ~300
    steps/s on the heaviest envs), since the heartbeat timeout catches a dead worker and the
    stall limit a hung child long before it."""
    return Deadline(
        timedelta(seconds=600 + timesteps / 100), HEARTBEAT, reserve=timedelta(minutes=1)
    )


FIXED: dict[str, Deadline] = {
    # Every activity of the llm pool is one LLM call.
    **{ref.name: LLM for ref in activities.ALL if ref.pool == "llm"},
    "validate_reward": VALIDATE,
    "validate_judge": VALIDATE,
    "evaluate_policy": EVALUATE,
    "judge_rollout": JUDGE,
    "session_tool": SESSION_TOOL,
    "store_benchmark": STORE,
    "record_lesson": STORE,
}


def for_activity(name: str, timesteps: int = 0) -> Deadline:
    """The deadlines of the activity named `name` (training: of `timesteps` steps in all, a
    batch's members' together)."""
    return train(timesteps) if name in ("train_policy", "train_batch") else FIXED[name]
