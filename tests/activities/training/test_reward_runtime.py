"""Loading reward code in both forms of the contract, and its one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from activities.training.reward_runtime import RewardLoadError, load_reward
from workers.local.train import check_reward_file

from .rewards import DUCK_TYPED, NAN, REWARD_FN, RUN_FORWARD

OBS = np.zeros(17)
ACT = np.full(6, 0.5)
INFO = {"x_velocity": 2.0}


def test_class_form():
    r = load_reward(RUN_FORWARD, "reward_fn.py")
    assert r.terms == ["forward", "ctrl"] and "v_x" in r.latex
    total, terms = r(OBS, ACT, OBS, INFO)
    assert terms == pytest.approx({"forward": 2.0, "ctrl": -0.15})
    assert total == pytest.approx(1.85)


def test_reward_fn_form():
    r = load_reward(REWARD_FN, "reward_fn.py")
    assert r.terms == ["forward"]
    assert r(OBS, ACT, OBS, INFO) == (2.0, {"forward": 2.0})


def test_duck_typed_class_without_our_base():
    r = load_reward(DUCK_TYPED, "reward_fn.py")
    assert r.terms == ["alive"]
    assert r(OBS, ACT, OBS, INFO) == (1.0, {"alive": 1.0})


def test_syntax_error_is_one_line_with_line_number():
    with pytest.raises(RewardLoadError) as err:
        load_reward(
            "def reward_fn(obs, action, next_obs, info):\n    return (1.0,\n\nx = ]\n", "r.py"
        )
    msg = str(err.value)
    assert msg.startswith("r.py does not parse: line ") and "\n" not in msg


def test_missing_function():
    with pytest.raises(RewardLoadError, match="no RewardFunction subclass and no reward_fn"):
        load_reward("import math\nSCALE = 2\n", "reward_fn.py")


def test_failure_at_import_is_reported():
    with pytest.raises(RewardLoadError, match="failed to load: ZeroDivisionError"):
        load_reward("x = 1 / 0\n", "reward_fn.py")


@pytest.mark.parametrize(
    "body",
    ["return 1.0", "return [1.0, {}]", "return (1.0, 2.0)"],
)
def test_wrong_return_type(body: str):
    r = load_reward(f"def reward_fn(obs, action, next_obs, info):\n    {body}\n", "reward_fn.py")
    with pytest.raises(RewardLoadError, match=r"must return \(float, dict\[str, float\]\)"):
        r(OBS, ACT, OBS, INFO)


def test_non_numeric_terms():
    r = load_reward(
        "def reward_fn(obs, action, next_obs, info):\n    return 1.0, {'a': 'fast'}\n", "r.py"
    )
    with pytest.raises(RewardLoadError, match="must be numbers"):
        r(OBS, ACT, OBS, INFO)


def test_nan_is_rejected():
    r = load_reward(NAN, "reward_fn.py")
    with pytest.raises(RewardLoadError, match="not finite"):
        r(OBS, ACT, OBS, INFO)


def test_check_reward_file(tmp_path):
    good = tmp_path / "reward.py"
    good.write_text(RUN_FORWARD)
    check_reward_file(good)
    bad = tmp_path / "reward.py"
    bad.write_text("import numpy as np\n\ndef reward_fn(obs:\n    pass\n")
    with pytest.raises(RewardLoadError) as err:
        check_reward_file(bad)
    assert str(err.value).startswith("reward.py does not parse: line 3: ")
