"""The time split of a session, from history events built as the server writes them."""

from __future__ import annotations

import json

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.common.v1 import ActivityType, Payload, Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import (
    ActivityTaskCompletedEventAttributes,
    ActivityTaskScheduledEventAttributes,
    ActivityTaskStartedEventAttributes,
    HistoryEvent,
)

from workers.dev.timing import split_of

T0 = 1_700_000_000.0
# A train_policy result as the worker returns it.
TRAIN_RESULT = {
    "run_prefix": "sessions/s/iter_1/c0_default_seed_0/",
    "model_key": "sessions/s/iter_1/c0_default_seed_0/model.zip",
    "vecnormalize_key": "sessions/s/iter_1/c0_default_seed_0/vecnormalize.npz",
    "timesteps_done": 20480,
    "wall_seconds": 100.0,
    "eval_checkpoint_seconds": 20.0,
}


def _event(event_id: int, kind: EventType.ValueType, at: float, **attrs: object) -> HistoryEvent:
    stamp = Timestamp()
    stamp.FromNanoseconds(int((T0 + at) * 1e9))
    e = HistoryEvent(event_id=event_id, event_type=kind, event_time=stamp)
    for name, value in attrs.items():
        getattr(e, name).CopyFrom(value)
    return e


def _activity(
    first_id: int,
    name: str,
    scheduled: float,
    started: float,
    ended: float,
    result: dict | None = None,
) -> list[HistoryEvent]:

    payloads = Payloads(payloads=[Payload(data=json.dumps(result or {}).encode())])
    return [
        _event(
            first_id,
            EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
            scheduled,
            activity_task_scheduled_event_attributes=ActivityTaskScheduledEventAttributes(
                activity_type=ActivityType(name=name)
            ),
        ),
        _event(
            first_id + 1,
            EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
            started,
            activity_task_started_event_attributes=ActivityTaskStartedEventAttributes(
                scheduled_event_id=first_id
            ),
        ),
        _event(
            first_id + 2,
            EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
            ended,
            activity_task_completed_event_attributes=ActivityTaskCompletedEventAttributes(
                scheduled_event_id=first_id, result=payloads
            ),
        ),
    ]


def test_the_split_separates_checkpoints_queueing_and_orchestration():
    events = [
        _event(1, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0.0),
        *_activity(10, "author_reward", 1.0, 1.0, 2.0),
        # Waits 5 s for a train worker, then trains 100 s, 20 of them checkpoints.
        *_activity(20, "train_policy", 3.0, 8.0, 108.0, TRAIN_RESULT),
        *_activity(30, "evaluate_policy", 110.0, 110.0, 125.0),
        *_activity(40, "judge_rollout", 126.0, 126.0, 127.0),
        _event(99, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 130.0),
    ]
    split = split_of(events)
    assert split.wall_s == pytest.approx(130.0)
    assert split.stages["authoring"] == pytest.approx(1.0)
    assert split.stages["training"] == pytest.approx(80.0)
    assert split.stages["evaluation and rendering"] == pytest.approx(35.0)
    assert split.stages["judging"] == pytest.approx(1.0)
    assert split.stages["waiting for a worker"] == pytest.approx(5.0)
    # 130 s of wall, 117 s with an activity running, 5 s waiting for one: 8 s orchestration.
    assert split.stages["orchestration"] == pytest.approx(8.0)
    assert split.line().startswith("time split of 130 s: training 80 s (62%)")


def test_evaluation_beside_training_counts_only_where_the_session_waited_for_it():
    # The evaluator beside training worked 30 s, all but the last 6 s while training went on;
    # handing the checkpoints over took training 1 s. No evaluate_policy: train carried it.
    result = {
        **TRAIN_RESULT,
        "eval_checkpoint_seconds": 1.0,
        "eval_wait_seconds": 6.0,
        "eval_work_seconds": 30.0,
    }
    events = [
        _event(1, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0.0),
        *_activity(20, "train_policy", 1.0, 1.0, 101.0, result),
        *_activity(40, "judge_rollout", 102.0, 102.0, 103.0),
        _event(99, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 104.0),
    ]
    split = split_of(events)
    assert split.stages["training"] == pytest.approx(93.0)
    assert split.stages["evaluation and rendering"] == pytest.approx(7.0)
    assert split.beside_s == pytest.approx(30.0)
    assert split.line().endswith("the evaluator beside training worked 30 s, mostly while it ran")


def test_a_batch_is_training_less_its_longest_group_of_hand_overs_and_evaluator_wait():
    # Two groups trained side by side, each with an evaluator beside it: one handed its members'
    # checkpoints over in 2 s and waited 10 s for its evaluator after training, the other 1 + 4.
    members = [
        {
            **TRAIN_RESULT,
            "run_prefix": f"sessions/s/iter_1/c{k}/",
            "eval_checkpoint_seconds": handing,
            "eval_wait_seconds": waiting,
            "eval_work_seconds": work,
        }
        for k, (handing, waiting, work) in enumerate(
            ((2.0, 10.0, 40.0), (2.0, 10.0, 40.0), (1.0, 4.0, 20.0))
        )
    ]
    events = [
        _event(1, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0.0),
        *_activity(20, "train_batch", 1.0, 1.0, 81.0, {"results": members, "groups": 2}),
        *_activity(30, "evaluate_policy", 82.0, 82.0, 90.0),
        _event(99, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 91.0),
    ]
    split = split_of(events)
    assert split.stages["training"] == pytest.approx(68.0)
    assert split.stages["evaluation and rendering"] == pytest.approx(20.0)
    assert split.stages["authoring"] == pytest.approx(0.0)
    assert split.beside_s == pytest.approx(40.0)
