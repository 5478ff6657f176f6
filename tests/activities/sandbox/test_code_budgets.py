"""Every run of generated code in the sandbox is inside a budget (issue 42): the hooks its
answers carry (`__float__`, `__str__`) run inside the call's budget, and module bodies run
only in loads and new instances, inside the module's budget, never in a scoring call."""

from __future__ import annotations

import re

import numpy as np
import pytest

from activities.sandbox.client import SandboxClient
from activities.sandbox.judge_client import judge_in_sandbox
from activities.sandbox.reward_client import SandboxRewards
from activities.sandbox.reward_code import RewardLoadError

# Answers whose conversion never ends: float() or str() of them loops in the code's own hook.
SLOW_TOTAL = """
class Endless:
    def __float__(self):
        while True:
            pass

def reward_fn(obs, action, next_obs, info):
    return Endless(), {"forward": 0.0}
"""

SLOW_NAME = """
class Name:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        return self is other

    def __str__(self):
        while True:
            pass

def reward_fn(obs, action, next_obs, info):
    return 0.0, {Name(): 0.0}
"""

SLOW_BATCH = """
class Endless:
    def __float__(self):
        while True:
            pass

class Forward(RewardFunction):
    vectorized = True

    def compute(self, obs, action, next_obs, info):
        return [Endless() for _ in range(len(obs))], {"forward": 0.0}
"""

SLOW_MEASURE = """
class Endless:
    def __float__(self):
        while True:
            pass

def judge_fn(trajectory):
    return {"criteria": {"fast": 0.5}, "measured": {"fast": Endless()}, "diagnosis": "",
            "failure_tags": []}
"""

SLOW_DIAGNOSIS = """
class Words:
    def __str__(self):
        while True:
            pass

def judge_fn(trajectory):
    return {"criteria": {"fast": 0.5}, "measured": {"fast": 1.0}, "diagnosis": Words(),
            "failure_tags": []}
"""

# Quick on its first run and slow on every later one (the Python layers off keep a count
# across runs): before, the first batch's two fresh instances ran it inside a scoring call,
# outside any module budget.
SLOW_AFTER_FIRST = """
import builtins
import time

builtins._pf_module_runs = getattr(builtins, "_pf_module_runs", 0) + 1
if builtins._pf_module_runs > 1:
    time.sleep(5)

class Forward(RewardFunction):
    vectorized = True

    def compute(self, obs, action, next_obs, info):
        return np.zeros(len(obs)), {"forward": np.zeros(len(obs))}

import numpy as np
"""

# Refuses to run once scoring has begun, and counts its module's runs in a term.
COUNTS_RUNS = """
import builtins
import numpy as np

if getattr(builtins, "_pf_scored", False):
    raise RuntimeError("the module body ran inside a scoring call")
builtins._pf_module_runs = getattr(builtins, "_pf_module_runs", 0) + 1

class Forward(RewardFunction):
    vectorized = True

    def compute(self, obs, action, next_obs, info):
        builtins._pf_scored = True
        zero = 0.0 * np.asarray(info["x_velocity"], dtype=float)  # a row's or a batch's
        return zero, {"runs": zero + float(builtins._pf_module_runs)}
"""


def _score_once(source: str, filename: str, **kwargs: bool) -> None:
    with SandboxClient() as box:
        rewards = SandboxRewards(box, source, filename, **kwargs)
        rid = rewards.new_instance()
        obs = np.zeros(17)
        rewards.score([(rid, obs, np.zeros(6), obs, {"x_velocity": 0.0})])


def _line(message: str, filename: str) -> int:
    found = re.search(rf"{re.escape(filename)} line (\d+)", message)
    assert found, message
    return int(found.group(1))


@pytest.mark.parametrize(
    ("source", "loop"), [(SLOW_TOTAL, (4, 5)), (SLOW_NAME, (10, 11))], ids=["float", "str"]
)
def test_a_hook_in_a_rows_answer_runs_inside_the_calls_budget(
    source: str, loop: tuple[int, int]
) -> None:
    with pytest.raises(RewardLoadError) as info:
        _score_once(source, "hooks.py")
    message = str(info.value)
    # The call's own 1 s budget, with the hook's loop: not the scoring read's 240 s cap.
    assert "one call of the reward ran longer than its 1 s budget" in message
    assert _line(message, "hooks.py") in loop


def test_a_hook_in_a_batchs_answer_runs_inside_the_batchs_budget(monkeypatch) -> None:
    monkeypatch.setenv("POLICYFORGE_SANDBOX_CALL_S", "0.05")  # a batch: 50 calls' worth
    with SandboxClient() as box:
        rewards = SandboxRewards(box, SLOW_BATCH, "batch.py")
        ids = [rewards.new_instance() for _ in range(4)]
        with pytest.raises(RewardLoadError) as info:
            rewards.score_columns(
                ids, np.zeros(4, bool), np.zeros((4, 17)), np.zeros((4, 6)), np.zeros((4, 17)),
                {"x_velocity": np.zeros(4)},
            )  # fmt: skip
    assert "one call of the reward on a batch ran longer than its 2.5 s budget" in str(info.value)
    assert _line(str(info.value), "batch.py") in (4, 5)


@pytest.mark.parametrize("source", [SLOW_MEASURE, SLOW_DIAGNOSIS], ids=["measured", "diagnosis"])
def test_a_hook_in_a_judgment_runs_inside_the_judges_budget(monkeypatch, source: str) -> None:
    monkeypatch.setenv("POLICYFORGE_SANDBOX_JUDGE_CALL_S", "1")
    trajectory = {"qpos": np.zeros((5, 3))}
    with SandboxClient() as box, pytest.raises(Exception) as info:
        judge_in_sandbox(box, source, "judge_fn.py", [trajectory], ["fast"])
    assert "one call of judge_fn ran longer than its 1 s budget" in str(info.value)
    assert _line(str(info.value), "judge_fn.py") in (4, 5)


def test_module_bodies_run_in_the_load_inside_its_budget(monkeypatch) -> None:
    monkeypatch.setenv("POLICYFORGE_SANDBOX_MODULE_S", "1")
    with SandboxClient() as box, pytest.raises(RewardLoadError) as info:
        SandboxRewards(box, SLOW_AFTER_FIRST, "module.py", python_layers=False)
    message = str(info.value)
    assert "one call of the module body ran longer than its 1 s budget" in message
    assert "keep its top level to definitions" in message


def test_a_scoring_call_runs_no_module_body() -> None:
    with SandboxClient() as box:
        rewards = SandboxRewards(box, COUNTS_RUNS, "runs.py", python_layers=False)
        ids = [rewards.new_instance() for _ in range(2)]  # the load's instance, then one more
        n = len(ids)
        _, terms = rewards.score_columns(
            ids, np.zeros(n, bool), np.zeros((n, 17)), np.zeros((n, 6)), np.zeros((n, 17)),
            {"x_velocity": np.zeros(n)},
        )  # fmt: skip
    # The load ran it three times (its instance and the first batch's two fresh ones) and the
    # second instance once: all before scoring.
    assert terms["runs"].tolist() == [4.0, 4.0]
