"""Turning: the torso's rate about its roll, pitch or yaw axis, the turn of one step, and the
turn counted over an episode (never wrapped: 2 pi per flip or full turn).

Exported to reward and judge code by `primitives` (`turn_between` is for trusted code, such as
the phase clock, that holds the states itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from activities.behaviours.layout import FREE, PLANAR, SWIMMER, layout
from activities.behaviours.parts import _out
from activities.behaviours.readings import _arr, _need
from activities.behaviours.torso import yaw_rate
from activities.envs.catalog import facts

ROTATION_AXES = ("roll", "pitch", "yaw")


def rotation_rate(env: str, data: Mapping[str, Any], axis: str = "pitch") -> Any:
    """Turning rate of the torso (rad/s) about `axis`: "pitch" nose-up about its own lateral
    axis, "roll" left side up about its own forward axis (the signs of `pitch` and `roll`),
    "yaw" counter-clockwise about the vertical (as `yaw_rate`); 0 about an axis the body
    cannot turn on (planar walkers only pitch, Swimmer only yaws)."""
    if axis not in ROTATION_AXES:
        known = ", ".join(ROTATION_AXES)
        raise ValueError(f"primitives: axis must be one of {known}; got {axis!r}")
    root = _need(env, (PLANAR, FREE, SWIMMER), "free-moving body")
    qvel = _arr(data, "qvel")
    if root in (PLANAR, SWIMMER):
        # rooty turns +x towards -z (nose down); Swimmer's root hinge is its heading.
        moves = "pitch" if root == PLANAR else "yaw"
        rate = -qvel[..., 2] if root == PLANAR else qvel[..., 2]
        return _out(rate if axis == moves else np.zeros_like(rate))
    if axis == "yaw":
        return yaw_rate(env, data)
    # qvel[3:6] is the angular velocity in the torso's frame: about +x lifts the left side,
    # about +y turns the nose down.
    return _out(qvel[..., 3] if axis == "roll" else -qvel[..., 4])


def rotation_step(env: str, data: Mapping[str, Any], axis: str = "pitch") -> Any:
    """Radians the torso turned about `axis` during the step (`rotation_rate` times the env's
    dt). Unlike `pitch`, `roll` and `heading`, its sum over an episode never wraps: a backflip
    adds +2 pi of pitch, a front flip -2 pi, a full left turn +2 pi of yaw. Reward code adds it
    up across steps; judge code gets one value per step and sums them."""
    return _out(np.asarray(rotation_rate(env, data, axis)) * facts(env).dt)


def total_rotation(env: str, data: Mapping[str, Any], axis: str = "pitch") -> Any:
    """Judge code: the torso's cumulative turn about `axis` (rad, signs as `rotation_rate`)
    since the episode began, one value per step of a trajectory; the last is the episode's
    total (2 pi per flip or full turn, never wrapped). Exact between recorded states; the first
    step counts `rotation_step`. On one step's info it is that step's `rotation_step`."""
    first = np.asarray(rotation_step(env, data, axis))
    qpos = _arr(data, "qpos")
    if qpos.ndim < 2 or len(qpos) < 2:
        return _out(first)
    turn = turn_between(env, qpos[:-1], qpos[1:], axis)
    return np.cumsum(np.concatenate([first[:1], turn]))


def turn_between(env: str, before: np.ndarray, after: np.ndarray, axis: str = "pitch") -> Any:
    """The torso's turn about `axis` (rad, signs as `rotation_rate`) from the states `before`
    to `after` (qpos rows), exact where `rotation_step` samples the end-of-step rate."""
    before, after = np.atleast_2d(before), np.atleast_2d(after)
    root = layout(env).root
    if root in (PLANAR, SWIMMER):
        sign = -1.0 if root == PLANAR else 1.0
        moves = "pitch" if root == PLANAR else "yaw"
        diff = after[:, 2] - before[:, 2]
        return sign * diff if axis == moves else np.zeros(len(diff))
    return _relative_turn(before[:, 3:7], after[:, 3:7], axis)


def _relative_turn(before: np.ndarray, after: np.ndarray, axis: str) -> np.ndarray:
    """Rotation from each `before` quaternion to its `after` about `axis` (rad), read off the
    rotation vector of conj(before) * after, which is in the torso's frame at `before`."""
    w1, x1, y1, z1 = (before[:, k] for k in range(4))
    w2, x2, y2, z2 = (after[:, k] for k in range(4))
    w = w1 * w2 + x1 * x2 + y1 * y2 + z1 * z2
    v = np.stack(
        [w1 * x2 - x1 * w2 - y1 * z2 + z1 * y2,
         w1 * y2 + x1 * z2 - y1 * w2 - z1 * x2,
         w1 * z2 - x1 * y2 + y1 * x2 - z1 * w2],
        axis=-1,
    )  # fmt: skip
    v = np.where(w[:, None] < 0.0, -v, v)  # q and -q are one rotation: take the shorter way
    norm = np.linalg.norm(v, axis=-1)
    angle = 2.0 * np.arctan2(norm, np.abs(w))
    rotvec = v * np.where(norm > 1e-12, angle / np.maximum(norm, 1e-12), 2.0)[:, None]
    if axis == "roll":
        return rotvec[:, 0]
    if axis == "pitch":
        return -rotvec[:, 1]
    # The world-vertical part: the world z row of the rotation matrix at `before`.
    up = np.stack(
        [2.0 * (x1 * z1 - w1 * y1), 2.0 * (y1 * z1 + w1 * x1), 1.0 - 2.0 * (x1 * x1 + y1 * y1)],
        axis=-1,
    )
    return np.sum(up * rotvec, axis=-1)
