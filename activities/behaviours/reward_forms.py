"""Reward forms: each measure turned into a bounded term in [0, 1] (1 = the behaviour is there),
plus the survival bonus and the control cost.

Exported to reward and judge code by `primitives`. Each form's scale is in its docstring; weigh
them against each other, not against unbounded terms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from activities.behaviours.fixed_base import cart_position, fingertip_distance, pole_angle
from activities.behaviours.limbs import (
    feet_contact,
    feet_heights,
    joint_angles,
    joint_speed,
    knee_heights,
)
from activities.behaviours.parts import _out
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
    wrap_angle,
    yaw_rate,
)

INF = math.inf


def velocity_reward(
    env: str, data: Mapping[str, Any], target: float, direction: float = 1.0
) -> float:
    """0 at rest or moving the wrong way, rising linearly to 1 at `target` m/s along
    `direction` (+1 forward, -1 backward) and staying 1 above it."""
    v = direction * forward_velocity(env, data)
    return tolerance(v, target, INF, margin=target, sigmoid="linear", value_at_margin=0.0)


def speed_tracking_reward(
    env: str, data: Mapping[str, Any], target: float, margin: float, direction: float = 1.0
) -> float:
    """1 at exactly `target` m/s along `direction`, a bell falling to 0.1 at `margin` m/s off."""
    v = direction * forward_velocity(env, data)
    return tolerance(v, target, target, margin=margin)


def still_reward(env: str, data: Mapping[str, Any], margin: float = 0.5) -> float:
    """1 when the body does not travel (ground speed 0), 0.1 at `margin` m/s."""
    return tolerance(speed(env, data), 0.0, 0.0, margin=margin)


def lateral_reward(env: str, data: Mapping[str, Any], margin: float = 0.5) -> float:
    """1 with no sideways velocity, 0.1 at `margin` m/s sideways: keeps a gait straight."""
    return tolerance(lateral_velocity(env, data), 0.0, 0.0, margin=margin)


def position_reward(
    env: str, data: Mapping[str, Any], x: float, y: float, radius: float, margin: float
) -> float:
    """1 within `radius` m of (x, y) on the ground, 0.1 at `margin` m beyond it."""
    px, py = position(env, data)[..., 0], position(env, data)[..., 1]
    return tolerance(np.hypot(px - x, py - y), 0.0, radius, margin=margin)


def height_reward(
    env: str, data: Mapping[str, Any], lower: float, upper: float = INF, margin: float = 0.3
) -> float:
    """1 with the torso between `lower` and `upper` m, 0.1 at `margin` m outside."""
    return tolerance(height(env, data), lower, upper, margin=margin)


def upright_reward(env: str, data: Mapping[str, Any], min_uprightness: float = 0.9) -> float:
    """1 at or above `min_uprightness`, falling linearly to 0 upside down (uprightness -1)."""
    u = uprightness(env, data)
    return tolerance(
        u, min_uprightness, INF, margin=min_uprightness + 1.0, sigmoid="linear", value_at_margin=0.0
    )


def pitch_reward(env: str, data: Mapping[str, Any], target: float, margin: float = 0.5) -> float:
    """1 at `target` rad of nose-up pitch or more, 0.1 at `margin` rad short of it."""
    return tolerance(pitch(env, data), target, INF, margin=margin)


def level_reward(env: str, data: Mapping[str, Any], margin: float = 0.5) -> float:
    """1 with no pitch and no roll, 0.1 when either is `margin` rad off."""
    tilt = np.maximum(np.abs(pitch(env, data)), np.abs(roll(env, data)))
    return tolerance(tilt, 0.0, 0.0, margin=margin)


def heading_reward(env: str, data: Mapping[str, Any], target: float, margin: float = 0.5) -> float:
    """1 facing `target` rad (counter-clockwise from +x), 0.1 at `margin` rad off."""
    return tolerance(wrap_angle(heading(env, data) - target), 0.0, 0.0, margin=margin)


def yaw_rate_reward(
    env: str, data: Mapping[str, Any], target: float, direction: float = 1.0
) -> float:
    """0 when not turning (or turning the wrong way), rising linearly to 1 at `target` rad/s
    counter-clockwise (direction +1) or clockwise (-1)."""
    r = direction * yaw_rate(env, data)
    return tolerance(r, target, INF, margin=target, sigmoid="linear", value_at_margin=0.0)


def joint_still_reward(env: str, data: Mapping[str, Any], margin: float = 1.0) -> float:
    """1 with the limbs still, 0.1 at `margin` rad/s RMS joint speed."""
    return tolerance(joint_speed(env, data), 0.0, 0.0, margin=margin)


def joint_target_reward(
    env: str, data: Mapping[str, Any], targets: Mapping[str, float], margin: float = 0.5
) -> float:
    """1 with every named joint at its target angle (rad), 0.1 when they are `margin` rad
    off (root mean square over the joints)."""
    angles = joint_angles(env, data, list(targets))
    err = np.sqrt(np.mean((angles - np.asarray(list(targets.values()))) ** 2, axis=-1))
    return tolerance(err, 0.0, 0.0, margin=margin)


def foot_height_reward(env: str, data: Mapping[str, Any], lower: float, margin: float) -> float:
    """1 when the highest foot is at least `lower` m up, 0.1 at `margin` m below that."""
    return tolerance(np.max(feet_heights(env, data), axis=-1), lower, INF, margin=margin)


def knee_height_reward(env: str, data: Mapping[str, Any], lower: float, margin: float) -> float:
    """1 when the higher knee is at least `lower` m up, 0.1 at `margin` m below that."""
    return tolerance(np.max(knee_heights(env, data), axis=-1), lower, INF, margin=margin)


def contact_reward(
    env: str, data: Mapping[str, Any], feet_down: float, margin: float = 1.0
) -> float:
    """1 with `feet_down` feet on the floor (0 = airborne), 0.1 at `margin` feet off."""
    down = np.sum(feet_contact(env, data), axis=-1)
    return tolerance(down, feet_down, feet_down, margin=margin)


def oscillation_reward(
    value: float, step: int, period: int, center: float, amplitude: float, margin: float
) -> float:
    """1 when `value` follows center + amplitude * sin(2 pi step / period), 0.1 at `margin`
    off: a clock that asks for a periodic motion (`step` counts the episode's steps)."""
    wanted = center + amplitude * math.sin(2.0 * math.pi * step / period)
    return tolerance(value - wanted, 0.0, 0.0, margin=margin)


def pole_reward(env: str, data: Mapping[str, Any], margin: float = 0.2) -> float:
    """1 with every pole link vertical, 0.1 at `margin` rad off."""
    return tolerance(pole_angle(env, data), 0.0, 0.0, margin=margin)


def center_reward(env: str, data: Mapping[str, Any], margin: float = 0.5) -> float:
    """1 with the cart in the middle of its rail, 0.1 at `margin` m from it."""
    return tolerance(cart_position(env, data), 0.0, 0.0, margin=margin)


def reach_reward(
    env: str, data: Mapping[str, Any], radius: float = 0.01, margin: float = 0.1
) -> float:
    """1 with the fingertip within `radius` m of the target, 0.1 at `margin` m beyond."""
    return tolerance(fingertip_distance(env, data), 0.0, radius, margin=margin)


def alive_reward() -> float:
    """Survival: a constant 1 per step the episode lasts (only envs that end an episode on a
    fall make this mean anything). Keep its weight below the behaviour's terms, or standing
    still becomes the best policy."""
    return 1.0


def control_cost(action: Any) -> float:
    """Sum of squared actions (every env's actions lie in [-1, 1] per joint, except
    Humanoid's [-0.4, 0.4]): subtract a small multiple to prefer economical motion."""
    a = np.asarray(action, dtype=np.float64)
    if a.ndim == 1:  # one step's action: a dot product, a third of a sum's cost
        return float(a @ a)
    return _out(np.sum(a * a, axis=-1))
