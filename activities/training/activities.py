"""The train pool's Temporal activities, as its workers register them (workers/pools/pools.py):
validate reward and judge code (validate_activities.py), train a policy (train_activity.py),
evaluate one (evaluate_activity.py). Each is a thin wrapper: fetch inputs from S3, run the
stage's child (`job.py`, which starts the sandbox where the reward code runs) under
`supervisor.run_child`, heartbeat its progress, upload its outputs; each works in its own
temporary folder, removed at the end. Batched training is batch_activity.py's `train_batch`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.training.evaluate_activity import evaluate_policy
from activities.training.train_activity import train_policy
from activities.training.validate_activities import validate_judge, validate_reward

TRAIN_ACTIVITIES: list[Callable[..., Any]] = [
    validate_reward,
    validate_judge,
    train_policy,
    evaluate_policy,
]
