"""A verdict in words never reads as if the value met its target."""

from __future__ import annotations

import pytest

from workflows.contracts.judging import CriterionScore
from workflows.verdict import verdict_text


def _speed(value: float, target: float, direction: str = "at_least") -> CriterionScore:
    return CriterionScore(
        name="forward_speed",
        metric="mean_x_velocity",
        value=value,
        target=target,
        direction=direction,
        score=0.9,
        unit="m/s",
        met=False,
        label="mean forward velocity",
    )


@pytest.mark.parametrize(
    ("value", "target", "direction", "words"),
    [
        # Swimmer's 0.1452 m/s read "0.15 m/s, target at least 0.15 m/s".
        (0.1452, 0.15, "at_least", "mean forward velocity 0.145 m/s, target at least 0.150 m/s"),
        (0.20049, 0.2, "at_most", "mean forward velocity 0.2005 m/s, target at most 0.2000 m/s"),
        (1.74, 2.0, "at_least", "mean forward velocity 1.74 m/s, target at least 2.00 m/s"),
    ],
)
def test_an_unmet_value_is_shown_apart_from_its_target(value, target, direction, words):
    assert verdict_text(False, [_speed(value, target, direction)]) == f"not passed: {words}"
