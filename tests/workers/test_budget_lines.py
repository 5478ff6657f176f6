"""What `policyforge run` says a session will train and how long that takes, before it starts."""

from __future__ import annotations

import pytest

from activities.envs.catalog import ENVS
from workers.cli.sessions import budget_line, expected_line
from workflows.contracts.budgets import BODY_STEPS, REFERENCE_CORES, STEPS_PER_S


def test_every_body_has_a_budget_and_a_measured_speed():
    assert set(BODY_STEPS) == set(ENVS) == set(STEPS_PER_S)
    assert all(rate > 0 for rate in STEPS_PER_S.values())


@pytest.mark.parametrize("env_id", ["Humanoid-v5", "Walker2d-v5", "InvertedPendulum-v5"])
def test_the_expected_time_is_the_budget_at_the_measured_speed(env_id: str):
    line = expected_line({"prompt": "walk", "env_id": env_id}, cores=REFERENCE_CORES)
    assert line is not None
    seconds = BODY_STEPS[env_id] / STEPS_PER_S[env_id]
    shown = f"{round(seconds / 60)} min" if seconds >= 90 else f"{max(1, round(seconds))} s"
    assert line.startswith(f"up to {shown} per run (")
    assert f"{STEPS_PER_S[env_id]:,.0f} steps/s measured for {env_id}" in line
    assert "3 iterations at most" in line and "stops early" in line
    assert "this machine has" not in line
    # The budget line and the time agree on the steps.
    assert f"{BODY_STEPS[env_id]:,} steps per run ({env_id}'s budget)" in budget_line(
        {"prompt": "walk", "env_id": env_id}
    )


def test_the_expected_time_follows_an_asked_budget_and_names_another_machine():
    line = expected_line(
        {
            "prompt": "run",
            "env_id": "HalfCheetah-v5",
            "total_timesteps": 60_000,
            "max_iterations": 1,
        },
        cores=16,
    )
    assert line is not None
    assert line.startswith(f"up to {round(60_000 / STEPS_PER_S['HalfCheetah-v5'])} s per run")
    assert "once;" in line and "this machine has 16" in line
