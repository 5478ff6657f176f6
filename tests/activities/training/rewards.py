"""Reward sources the training tests use (text: reward code only ever runs in a child)."""

from activities.runner.baseline_reward import RUN_FORWARD

__all__ = ["RUN_FORWARD", "REWARD_FN", "DUCK_TYPED", "RAISES_LINE_7", "PRINTS", "NAN", "BAD_SUM"]

REWARD_FN = """\
import numpy as np

TERMS = ["forward"]


def reward_fn(obs, action, next_obs, info):
    return float(info["x_velocity"]), {"forward": float(info["x_velocity"])}
"""

DUCK_TYPED = """\
class Upright:
    terms = ["alive"]
    latex = "1"

    def compute(self, obs, action, next_obs, info):
        return 1.0, {"alive": 1.0}
"""

RAISES_LINE_7 = """\
import numpy as np


def reward_fn(obs, action, next_obs, info):
    speed = float(info["x_velocity"])
    zero = 0.0
    ratio = speed / zero
    return ratio, {"ratio": ratio}
"""

PRINTS = """\
def reward_fn(obs, action, next_obs, info):
    print("debugging", info["x_velocity"])  # must not corrupt the child's progress stream
    return float(info["x_velocity"]), {"forward": float(info["x_velocity"])}
"""

NAN = """\
def reward_fn(obs, action, next_obs, info):
    return float("nan"), {"x": float("nan")}
"""

BAD_SUM = """\
def reward_fn(obs, action, next_obs, info):
    return 2.0, {"a": 1.0}
"""
