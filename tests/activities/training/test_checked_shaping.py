"""A reward's SHAPING is checked once, in validation, and that value is what later runs apply
(issue 42): a module whose SHAPING changes between processes cannot slip another one into
training."""

from __future__ import annotations

import pytest

from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child
from activities.training import checked_shaping
from activities.training.job import TRAIN, VALIDATE
from tests.activities.training.rewards import RUN_FORWARD

# Plain exec (the Python layers off) lets the module read the sandbox's environment: its SHAPING
# is sound where validation runs it and out of range anywhere else.
VARYING = (
    RUN_FORWARD
    + """
import os

if os.environ.get("POLICYFORGE_SANDBOX_TEST_STAGE") == "validate":
    SHAPING = {"max_episode_steps": 200}
else:
    SHAPING = {"obs_drop": [999]}
"""
)


def test_a_record_is_read_only_for_the_code_it_was_made_for() -> None:
    text = checked_shaping.record_text(VARYING, {"max_episode_steps": 200})
    checked = checked_shaping.read_record(text, VARYING)
    assert checked is not None and checked.value == {"max_episode_steps": 200}
    assert checked_shaping.read_record(text, VARYING + "\n# edited\n") is None
    assert checked_shaping.read_record(b"\xff not json", VARYING) is None
    none = checked_shaping.read_record(checked_shaping.record_text(RUN_FORWARD, None), RUN_FORWARD)
    assert none is not None and none.value is None


@pytest.mark.slow  # validation, then two short training runs
async def test_training_applies_the_shaping_validation_checked(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("POLICYFORGE_SANDBOX_TEST_STAGE", "validate")
    base = ChildRequest(env_id="Hopper-v5", reward_source=VARYING, python_layers=False)
    validated = await run_child(VALIDATE, base, tmp_path / "validate", timeout_s=180)
    assert validated["shaping"] == {"max_episode_steps": 200}
    record = checked_shaping.record_text(VARYING, validated["shaping"])

    monkeypatch.setenv("POLICYFORGE_SANDBOX_TEST_STAGE", "train")
    train = base.model_copy(update={"timesteps": 512, "ppo": {"n_steps": 32}})
    # Without the record, the module's other SHAPING is the reward's error, for the fixer.
    with pytest.raises(ChildFailed) as info:
        await run_child(TRAIN, train, tmp_path / "alone", timeout_s=300)
    assert info.value.reward_fault and "obs_drop" in info.value.message

    carried = train.model_copy(
        update={"reward_shaping": checked_shaping.read_record(record, VARYING)}
    )
    summary = await run_child(TRAIN, carried, tmp_path / "carried", timeout_s=300)
    assert summary["timesteps"] >= 512
