"""The numbers poses are built from, per env, and the `PoseTerm` each pose gives.

Head, knee, foot and torso heights, stance widths, which feet are rear or front, and the lean
and level angles, each inside the body's healthy range; read by `limb_poses` and `torso_poses`.
"""

from __future__ import annotations

from dataclasses import dataclass

from activities.llm.offline.behaviours.compose import Direction

HANDS = ("left_hand", "right_hand")
LEAN = 0.35  # rad (20 degrees): a lean people see, inside every body's healthy range
# Heights (m) of the head standing, and of a lowered or raised head, per env.
HEAD = {"Humanoid-v5": (1.35, 1.5), "HalfCheetah-v5": (0.45, 0.9)}
# Knee heights of one raised knee (the high-knees lift).
KNEE_UP = {
    "Walker2d-v5": 0.9,
    "Humanoid-v5": 0.75,
    "HumanoidStandup-v5": 0.75,
    "HalfCheetah-v5": 0.5,
}
# (part a, part b, wide at least, narrow at most) of a stance, per env.
STANCE = {
    "Humanoid-v5": ("left_foot", "right_foot", 0.45, 0.1),
    "HumanoidStandup-v5": ("left_foot", "right_foot", 0.45, 0.1),
    "Walker2d-v5": ("left_foot", "right_foot", 0.4, 0.1),
    "HalfCheetah-v5": ("back_foot", "front_foot", 1.35, 0.9),
}
FEET: dict[str, dict[str, tuple[str, ...]]] = {
    "Ant-v5": {
        "rear": ("back_left_foot", "back_right_foot"),
        "front": ("front_left_foot", "front_right_foot"),
    },
    "HalfCheetah-v5": {"rear": ("back_foot",), "front": ("front_foot",)},
}
ONE_FOOT = {"Humanoid-v5": ("left_foot", "right_foot"), "Walker2d-v5": ("left_foot", "right_foot")}
ANT_FEET = ("front_left_foot", "front_right_foot", "back_left_foot", "back_right_foot")
# Torso heights (m): a low torso at most, a tall one at least, inside each env's healthy range.
# Measured at rest (zero action, 1 s): Ant 0.42, HalfCheetah 0.57; walking policies carry the
# Ant's torso at about 0.55-0.65 m and the cheetah's at 0.6-0.7 m. Humanoid-v5 ends an episode
# below 1.0 m, Walker2d-v5 below 0.8 m and Hopper-v5 below 0.7 m.
TORSO_LOW = {
    "Ant-v5": 0.45,
    "HalfCheetah-v5": 0.5,
    "Humanoid-v5": 1.15,
    "Walker2d-v5": 1.0,
    "Hopper-v5": 1.0,
}
TORSO_TALL = {
    "Ant-v5": 0.7,
    "Humanoid-v5": 1.3,
    "HumanoidStandup-v5": 1.2,
    "Walker2d-v5": 1.2,
    "Hopper-v5": 1.25,
}
LEVEL = 0.15  # rad (9 degrees): the most pitch or roll a level torso shows


@dataclass(frozen=True)
class PoseTerm:
    """A pose's reward term (an expression over ENV and info) and its criterion."""

    call: str
    meaning: str
    criterion: str  # description
    series: str  # the same measure over a trajectory `t`
    target: float
    direction: Direction
    tolerance: float
    unit: str
    label: str
    metric: str = ""  # a built-in metric that measures it (then no judge code is needed)
    name: str = ""  # the term's and criterion's name when a pose has several (else the pose's)
