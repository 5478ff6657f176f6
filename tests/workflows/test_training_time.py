"""The training time a status shows while runs train moves as fast as the session will be
charged for them: each run its own wall time, as an ended run's is (issue 43)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from workflows.contracts.session import SessionStatus

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _status(**kwargs: object) -> SessionStatus:
    return SessionStatus.model_validate(
        {
            "session_id": "s",
            "prompt": "run forward",
            "env_id": "HalfCheetah-v5",
            "model_label": "offline",
            "stage": "training",
            "iteration": 2,
            "max_iterations": 3,
            "timesteps_done": 0,
            "timesteps_target": 1000,
            "best_score": None,
            "best_iteration": None,
            **kwargs,
        }
    )


def test_runs_training_side_by_side_each_count_their_own_time() -> None:
    began = NOW - timedelta(seconds=10)
    three = _status(training_seconds=60.0, training_since=began, training_began=[began] * 3)
    assert three.training_so_far(NOW) == 90.0
    staggered = [NOW - timedelta(seconds=10), NOW - timedelta(seconds=4)]
    both = _status(training_seconds=60.0, training_since=staggered[0], training_began=staggered)
    assert both.training_so_far(NOW) == 74.0


def test_a_status_with_only_the_oldest_start_counts_it_once() -> None:
    status = _status(training_seconds=60.0, training_since=NOW - timedelta(seconds=10))
    assert status.training_so_far(NOW) == 70.0
    assert _status(training_seconds=60.0).training_so_far(NOW) == 60.0
