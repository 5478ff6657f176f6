"""Primitives: what can be measured on each robot, and a bounded reward for each.

Reward and judge code import this module inside the sandbox (`import primitives as P`). Every
measure takes the env id and `data`, a mapping with `qpos` and `qvel` (and, where the env has
them, `feet_z`, `feet_contact`, `knees_z`, `parts_pos`, `x_velocity`): a reward passes its step's
`info` and gets a number; a judge passes the trajectory dict (arrays of T rows) and gets an array
of T values. The same function on both sides is what makes a reward term and the criterion that
judges it mean the same thing. The named parts' primitives (head, hands, feet, knees) live in
`parts.py` and are exported from here.

Reward forms end in `_reward` and return a value in [0, 1] (1 = the behaviour is there): weigh
them against each other, not against unbounded terms. Scales are documented per function.

Each kind of measure lives in a module of its own, all exported from here: `torso` (travel,
height, orientation), `rotation` (turning rates and turns counted over an episode), `limbs`
(joints, feet, knees, a series' rhythm), `fixed_base` (pendulum pole and cart, Reacher's
fingertip), `parts` (named body parts) and `reward_forms` (the `_reward` forms, `alive_reward`,
`control_cost`); `readings` holds how they all read `data`.
"""

from __future__ import annotations

from activities.behaviours.fixed_base import cart_position, fingertip_distance, pole_angle
from activities.behaviours.limbs import (
    dominant_frequency,
    feet_contact,
    feet_heights,
    joint_angles,
    joint_names,
    joint_speed,
    knee_heights,
)
from activities.behaviours.parts import (
    part_distance,
    part_distance_reward,
    part_height,
    part_height_reward,
    part_names,
)
from activities.behaviours.reward_forms import (
    INF,
    alive_reward,
    center_reward,
    contact_reward,
    control_cost,
    foot_height_reward,
    heading_reward,
    height_reward,
    joint_still_reward,
    joint_target_reward,
    knee_height_reward,
    lateral_reward,
    level_reward,
    oscillation_reward,
    pitch_reward,
    pole_reward,
    position_reward,
    reach_reward,
    speed_tracking_reward,
    still_reward,
    upright_reward,
    velocity_reward,
    yaw_rate_reward,
)
from activities.behaviours.rotation import ROTATION_AXES as ROTATION_AXES
from activities.behaviours.rotation import rotation_rate, rotation_step, total_rotation
from activities.behaviours.rotation import turn_between as turn_between
from activities.behaviours.shaping import tolerance
from activities.behaviours.torso import (
    forward_velocity,
    heading,
    height,
    lateral_velocity,
    pitch,
    position,
    roll,
    speed,
    uprightness,
    vertical_velocity,
    wrap_angle,
    yaw_rate,
)

__all__ = [
    "INF",
    "alive_reward",
    "cart_position",
    "center_reward",
    "contact_reward",
    "control_cost",
    "dominant_frequency",
    "feet_contact",
    "feet_heights",
    "fingertip_distance",
    "foot_height_reward",
    "forward_velocity",
    "heading",
    "heading_reward",
    "height",
    "height_reward",
    "joint_angles",
    "joint_names",
    "joint_speed",
    "joint_still_reward",
    "joint_target_reward",
    "knee_height_reward",
    "knee_heights",
    "lateral_reward",
    "lateral_velocity",
    "level_reward",
    "oscillation_reward",
    "part_distance",
    "part_distance_reward",
    "part_height",
    "part_height_reward",
    "part_names",
    "pitch",
    "pitch_reward",
    "pole_angle",
    "pole_reward",
    "position",
    "position_reward",
    "reach_reward",
    "roll",
    "rotation_rate",
    "rotation_step",
    "speed",
    "speed_tracking_reward",
    "still_reward",
    "tolerance",
    "total_rotation",
    "upright_reward",
    "uprightness",
    "velocity_reward",
    "vertical_velocity",
    "wrap_angle",
    "yaw_rate",
    "yaw_rate_reward",
]
