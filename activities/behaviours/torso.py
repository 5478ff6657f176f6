"""Measures of the torso: how it travels (velocity, speed, position), its height, and which way
it faces (uprightness, pitch, roll, heading, yaw rate), with `wrap_angle` for angle differences.

Exported to reward and judge code by `primitives`; turning rates about any axis and turns
counted over an episode are in `rotation`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from activities.behaviours.layout import FREE, PLANAR, SWIMMER, layout
from activities.behaviours.parts import _out
from activities.behaviours.readings import _arr, _asin, _col, _cos, _info, _need, _quat


def forward_velocity(env: str, data: Mapping[str, Any]) -> Any:
    """Velocity along +x (m/s): the env's own x_velocity where it reports one, else the root's."""
    _need(env, (PLANAR, FREE, SWIMMER), "free-moving body")
    v = _info(data, "x_velocity")
    return _out(v if v is not None else _col(data, "qvel", 0))


def lateral_velocity(env: str, data: Mapping[str, Any]) -> Any:
    """Velocity along +y (m/s, to the robot's left at the start); 0 for planar walkers."""
    root = _need(env, (PLANAR, FREE, SWIMMER), "free-moving body")
    qvel = _arr(data, "qvel")
    if root == PLANAR:
        return _out(np.zeros_like(qvel[..., 0]))
    v = _info(data, "y_velocity")
    return _out(v if v is not None else qvel[..., 1])


def speed(env: str, data: Mapping[str, Any]) -> Any:
    """Speed over the ground (m/s), whatever the direction."""
    return _out(np.hypot(forward_velocity(env, data), lateral_velocity(env, data)))


def position(env: str, data: Mapping[str, Any]) -> Any:
    """Root position (x, y) in metres as the last axis; y is 0 for planar walkers."""
    root = _need(env, (PLANAR, FREE, SWIMMER), "free-moving body")
    qpos = _arr(data, "qpos")
    y = np.zeros_like(qpos[..., 0]) if root == PLANAR else qpos[..., 1]
    return np.stack([qpos[..., 0], y], axis=-1)


def height(env: str, data: Mapping[str, Any]) -> Any:
    """Torso height above the floor (m)."""
    lay = layout(env)
    if lay.height_index is None:
        raise ValueError(f"primitives: {env} has no torso height")
    return _out(_col(data, "qpos", lay.height_index) + lay.height_offset)


def vertical_velocity(env: str, data: Mapping[str, Any]) -> Any:
    """Upward velocity of the torso (m/s): rising above 0, falling below."""
    lay = layout(env)
    if lay.height_index is None:
        raise ValueError(f"primitives: {env} has no torso height")
    return _out(_col(data, "qvel", lay.height_index))


def uprightness(env: str, data: Mapping[str, Any]) -> Any:
    """How upright the torso is: 1 upright, 0 lying on its side or back, -1 upside down."""
    root = _need(env, (PLANAR, FREE), "torso orientation")
    if root == PLANAR:
        return _out(_cos(_col(data, "qpos", 2)))
    w, x, y, z = _quat(data)
    if layout(env).up_axis == "-x":
        return _out(2.0 * (w * y - x * z))  # world z of the body's -x axis
    return _out(1.0 - 2.0 * (x * x + y * y))  # world z of the body's +z axis


def pitch(env: str, data: Mapping[str, Any]) -> Any:
    """Nose-up pitch of the torso's forward (+x) axis above the horizontal (rad)."""
    root = _need(env, (PLANAR, FREE), "torso orientation")
    if root == PLANAR:
        # A positive rooty turns +x towards -z (nose down).
        return _out(-_col(data, "qpos", 2))
    w, x, y, z = _quat(data)
    return _out(_asin(2.0 * (x * z - w * y)))


def roll(env: str, data: Mapping[str, Any]) -> Any:
    """Roll of the torso about its forward axis (rad, left side up positive); 0 when planar."""
    root = _need(env, (PLANAR, FREE), "torso orientation")
    if root == PLANAR:
        return _out(np.zeros_like(_arr(data, "qpos")[..., 0]))
    w, x, y, z = _quat(data)
    return _out(_asin(2.0 * (y * z + w * x)))


def heading(env: str, data: Mapping[str, Any]) -> Any:
    """Heading about the vertical (rad, counter-clockwise from +x seen from above; not
    unwrapped); 0 for planar walkers, which always face +x."""
    root = _need(env, (PLANAR, FREE, SWIMMER), "heading")
    qpos = _arr(data, "qpos")
    if root == PLANAR:
        return _out(np.zeros_like(qpos[..., 0]))
    if root == SWIMMER:
        return _out(qpos[..., 2])
    w, x, y, z = _quat(data)
    return _out(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))


def yaw_rate(env: str, data: Mapping[str, Any]) -> Any:
    """Turning rate about the world vertical (rad/s, counter-clockwise positive)."""
    root = _need(env, (PLANAR, FREE, SWIMMER), "heading")
    qvel = _arr(data, "qvel")
    if root == PLANAR:
        return _out(np.zeros_like(qvel[..., 0]))
    if root == SWIMMER:
        return _out(qvel[..., 2])
    w, x, y, z = _quat(data)
    # qvel[3:6] is the body-frame angular velocity: take the world z row of R(q).
    return _out(
        2.0 * (x * z - w * y) * qvel[..., 3]
        + 2.0 * (y * z + w * x) * qvel[..., 4]
        + (1.0 - 2.0 * (x * x + y * y)) * qvel[..., 5]
    )


def wrap_angle(angle: Any) -> Any:
    """An angle (or angle difference) brought into [-pi, pi)."""
    return _out(np.mod(np.asarray(angle, dtype=np.float64) + math.pi, 2.0 * math.pi) - math.pi)
