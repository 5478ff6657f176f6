"""Judge code in the sandbox, and generated code that writes to what it was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child
from activities.training.job import VALIDATE_JUDGE
from tests.activities.sandbox.corpus import CANARY

ZERO = 'def reward_fn(obs, action, next_obs, info):\n    return 0.0, {"zero": 0.0}\n'

# Writes into its copies of info and the state arrays, and would report a huge speed if the
# copies were the trainer's or the simulator's.
MEDDLING_REWARD = """
def reward_fn(obs, action, next_obs, info):
    info["x_velocity"] = 1e9
    info["terminal_observation"] = None
    try:
        info["qpos"][0] = 1e9
    except ValueError:
        pass
    return 0.0, {"zero": 0.0}
"""

# Fails the check unless the recorded episode is untouched by the reward above.
STATE_CHECKING_JUDGE = """
import numpy as np

def judge_fn(trajectory):
    if np.max(np.abs(trajectory["info_x_velocity"])) > 1e3:
        raise AssertionError("the reward's write reached the env's info")
    if np.max(np.abs(trajectory["qpos"][:, 0])) > 1e3:
        raise AssertionError("the reward's write moved the robot")
    return {"criteria": {}, "measured": {}, "diagnosis": "untouched", "failure_tags": []}
"""

HOSTILE_JUDGES = [
    (f"import numpy as np\ndef judge_fn(t):\n    np.save('{CANARY}', t['qpos'])\n",
     "'.save' is not allowed"),
    ("def judge_fn(t):\n    while True:\n        pass\n", "ran longer than its 2 s budget"),
    ("def judge_fn(t):\n    t['qpos'][0, 0] = 5.0\n    return {}\n", "read-only"),
    ("def judge_fn(t):\n    return 0.9\n", "must return a dict"),
    ("def judge_fn(t):\n    return {'score': 2, 'criteria': {}, 'measured': {}, 'diagnosis': ''}\n",
     "must be in [0, 1]"),
    ("import os\ndef judge_fn(t):\n    return {}\n", "import of 'os' is not allowed"),
]  # fmt: skip


async def _validate_judge(judge: str, reward: str, scratch: Path) -> dict:
    req = ChildRequest(
        env_id="Hopper-v5", reward_source=reward, judge_source=judge, steps=60, seed=1
    )
    return await run_child(VALIDATE_JUDGE, req, scratch, timeout_s=180)


async def test_writes_to_info_and_state_reach_neither_the_trainer_nor_the_robot(tmp_path):
    result = await _validate_judge(STATE_CHECKING_JUDGE, MEDDLING_REWARD, tmp_path)
    assert result["judgment"]["diagnosis"] == "untouched"


@pytest.mark.parametrize(("judge", "expected"), HOSTILE_JUDGES)
async def test_hostile_or_broken_judges_fail_with_one_line(tmp_path, monkeypatch, judge, expected):
    # The judge's per-call budget (60 s by default), shortened for the test.
    monkeypatch.setenv("POLICYFORGE_SANDBOX_JUDGE_CALL_S", "2")
    with pytest.raises(ChildFailed) as info:
        await _validate_judge(judge, ZERO, tmp_path)
    assert info.value.reward_fault and expected in info.value.message
    assert "\n" not in info.value.message
    assert not Path(CANARY).exists()
