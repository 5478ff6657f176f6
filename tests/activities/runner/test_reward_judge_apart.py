"""The session's reward and its judge never share a sandbox process: nothing the reward's module
does (seed numpy's global generator, which the Python layers allow; set an attribute on a
module, which only the OS layers stand against) reaches the judge.

`validate_judge` is the one mode that runs both: a random episode scored by the reward, then
judged by the judge code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import run_child
from activities.training import job as training_job

SEED = 12345
FIRST_DRAW = float(np.random.RandomState(SEED).random_sample())

REWARD = """
import numpy as np
np.random.seed({seed})  # the process's global generator: a judge beside it draws from it
{extra}
def reward_fn(obs, action, next_obs, info):
    return 0.0, {{"zero": 0.0}}
"""
REWARD_OS_ONLY = "import math\nmath.pf_left_by_the_reward = 'reward was here'\n"
JUDGE = """
import numpy as np
{extra}
def judge_fn(trajectory):
    draw = float(np.random.random())
    return {{"score": 0.5, "criteria": {{}}, "measured": {{}}, "failure_tags": [],
            "diagnosis": "draw %r; %s" % (draw, seen)}}
"""
JUDGE_PLAIN = "seen = 'nothing to look at'\n"
JUDGE_OS_ONLY = "import math\nseen = getattr(math, 'pf_left_by_the_reward', 'nothing seen')\n"


@pytest.mark.parametrize("python_layers", [True, False], ids=["python-layers", "os-only"])
async def test_state_the_reward_sets_is_not_visible_to_the_judge(
    tmp_path: Path, python_layers: bool
) -> None:
    req = ChildRequest(
        env_id="HalfCheetah-v5",
        reward_source=REWARD.format(seed=SEED, extra="" if python_layers else REWARD_OS_ONLY),
        judge_source=JUDGE.format(extra=JUDGE_PLAIN if python_layers else JUDGE_OS_ONLY),
        steps=16,
        criteria=[],
        python_layers=python_layers,
    )
    result = await run_child(training_job.VALIDATE_JUDGE, req, tmp_path, timeout_s=120)
    diagnosis = result["judgment"]["diagnosis"]
    print(diagnosis)
    assert f"draw {FIRST_DRAW!r}" not in diagnosis, "the judge drew from the reward's seed"
    assert "reward was here" not in diagnosis
