"""Where a session's wall time went, read from its Temporal history.

Each activity's time runs from its task's start to its end event. The stages are the session's
critical path: the time it waited for each kind of work. `train_policy` and `train_batch` are
split into learning and evaluation by the seconds their results report: the evaluation
checkpoints' share of the training child's time (with an evaluator beside training, only
handing each policy over) and the time the activity waited for that evaluator after training
ended (the last checkpoint and the final evaluation episode with its video). Evaluation the
evaluator did while training went on, on the core training left idle, delayed nothing: it is
reported apart (`beside_s`, the evaluator's working time) and not in the stages.
Of the wall time in which no activity ran, "waiting for a worker" is when one was scheduled but
no worker had taken it yet (its pool busy with other sessions), "orchestration" the rest
(workflow tasks, retries' backoff). Activities that ran side by side each count their own time,
so the stages can add up to more than the wall time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from workflows.contracts.activities import (
    AUTHOR_JUDGE,
    EVALUATE_POLICY,
    JUDGE_ROLLOUT,
    SYNTHESIZE_JUDGMENT,
    TRAIN_BATCH,
    TRAIN_POLICY,
    VALIDATE_JUDGE,
    VALIDATE_REWARD,
    VLM_JUDGE,
)
from workflows.contracts.training import TrainBatchResult, TrainResult

_R = TypeVar("_R", TrainResult, TrainBatchResult)

STAGES = (
    "training",
    "evaluation and rendering",
    "judging",
    "authoring",
    "waiting for a worker",
    "orchestration",
)
# Every other activity (the authors, reviewers, revisers, lessons) counts as authoring.
_STAGE_OF = {
    TRAIN_POLICY.name: "training",
    TRAIN_BATCH.name: "training",
    VALIDATE_REWARD.name: "training",
    EVALUATE_POLICY.name: "evaluation and rendering",
    JUDGE_ROLLOUT.name: "judging",
    SYNTHESIZE_JUDGMENT.name: "judging",
    VLM_JUDGE.name: "judging",
    VALIDATE_JUDGE.name: "judging",
    AUTHOR_JUDGE.name: "judging",
}
_ENDS = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity_task_completed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity_task_failed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity_task_timed_out_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "activity_task_canceled_event_attributes",
}


@dataclass
class Split:
    """Seconds per stage of one session run, and its wall time."""

    wall_s: float = 0.0
    stages: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    # Evaluation done beside training (off the critical path, in no stage).
    beside_s: float = 0.0
    # Single runs' steps trained and budgeted (fewer trained when a run stopped at pass).
    steps_used: int = 0
    steps_budget: int = 0

    def line(self) -> str:
        """'time split of 160 s: training 100 s (62%), ...' for a terminal."""
        wall = max(self.wall_s, 1e-9)
        parts = [f"{name} {s:.0f} s ({100 * s / wall:.0f}%)" for name, s in self.stages.items()]
        beside = (
            f"; the evaluator beside training worked {self.beside_s:.0f} s, mostly while it ran"
            if self.beside_s
            else ""
        )
        steps = (
            f"; trained {self.steps_used:,} of {self.steps_budget:,} steps budgeted"
            if self.steps_budget
            else ""
        )
        return f"time split of {self.wall_s:.0f} s: " + ", ".join(parts) + beside + steps


def _seconds(event: HistoryEvent) -> float:
    return event.event_time.ToNanoseconds() / 1e9


def split_of(events: list[HistoryEvent]) -> Split:
    """The split of one workflow run's history events."""
    out = Split()
    if not events:
        return out
    names: dict[int, str] = {}
    scheduled: dict[int, float] = {}
    started: dict[int, float] = {}
    intervals: list[tuple[float, float]] = []
    waits: list[tuple[float, float]] = []
    for e in events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            names[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[e.event_id] = _seconds(e)
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            key = e.activity_task_started_event_attributes.scheduled_event_id
            started[key] = _seconds(e)
            waits.append((scheduled.get(key, started[key]), started[key]))
        elif e.event_type in _ENDS:
            attrs = getattr(e, _ENDS[e.event_type])
            begin = started.get(attrs.scheduled_event_id)
            if begin is None:
                continue
            end = _seconds(e)
            intervals.append((begin, end))
            name = names.get(attrs.scheduled_event_id, "")
            stage = _STAGE_OF.get(name, "authoring")
            completed = e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
            evaluating = 0.0
            if completed and name == TRAIN_POLICY.name:
                trained = _result(attrs, TrainResult)
                if trained is not None:
                    evaluating = trained.eval_checkpoint_seconds + trained.eval_wait_seconds
                    out.beside_s += trained.eval_work_seconds
                    if trained.timesteps_budget:
                        out.steps_used += trained.timesteps_done
                        out.steps_budget += trained.timesteps_budget
            elif completed and name == TRAIN_BATCH.name:
                # A batch's groups run side by side, each with its evaluator: the longest
                # group's hand-overs and wait are what the session waited for.
                batch = _result(attrs, TrainBatchResult)
                if batch is not None and batch.results:
                    evaluating = max(
                        r.eval_checkpoint_seconds + r.eval_wait_seconds for r in batch.results
                    )
                    out.beside_s += max(r.eval_work_seconds for r in batch.results)
            out.stages[stage] += end - begin - evaluating
            out.stages["evaluation and rendering"] += evaluating
    out.wall_s = _seconds(events[-1]) - _seconds(events[0])
    running = _union(intervals)
    waiting = max(0.0, _union(intervals + waits) - running)
    out.stages["waiting for a worker"] = waiting
    out.stages["orchestration"] = max(0.0, out.wall_s - running - waiting)
    return out


def _result(attrs: object, contract: type[_R]) -> _R | None:
    """A completed activity's result as `contract` (None when unreadable)."""
    try:
        payload = attrs.result.payloads[0].data  # type: ignore[attr-defined]
        return contract.model_validate_json(payload)
    except (IndexError, ValueError):
        return None


def _union(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for begin, end in sorted(intervals):
        if end > reach:
            total += end - max(begin, reach)
            reach = end
    return total


async def session_split(client: Client, workflow_id: str) -> Split:
    """The split of a session's latest run."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return split_of(list(history.events))
