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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from activities.behaviours.layout import FREE, PLANAR, SWIMMER, layout
from activities.behaviours.parts import (
    _out,
    part_distance,
    part_distance_reward,
    part_height,
    part_height_reward,
    part_names,
)
from activities.behaviours.shaping import tolerance
from activities.envs.catalog import facts

INF = math.inf


def _arr(data: Mapping[str, Any], key: str) -> np.ndarray:
    try:
        value = data[key]
    except KeyError:
        raise ValueError(
            f"primitives: data has no {key!r} (pass the step's info or the trajectory)"
        ) from None
    return np.asarray(value, dtype=np.float64)


def _info(data: Mapping[str, Any], key: str) -> Any:
    """An env info value: `key` in a step's info (a float stays one: cheaper per step than
    an array of none), `info_<key>` in a trajectory."""
    for name in (key, f"info_{key}"):
        if name in data:
            value = data[name]
            return value if type(value) is float else np.asarray(value, dtype=np.float64)
    return None


def _need(env: str, kinds: tuple[str, ...], what: str) -> str:
    root = layout(env).root
    if root not in kinds:
        raise ValueError(f"primitives: {env} has no {what}")
    return root


def _col(data: Mapping[str, Any], key: str, i: int) -> Any:
    """Entry i of `key`: a float for one step (plain floats keep a step's arithmetic cheap),
    the column for a trajectory."""
    a = _arr(data, key)
    return float(a[i]) if a.ndim == 1 else a[..., i]


def _quat(data: Mapping[str, Any]) -> tuple[Any, ...]:
    q = _arr(data, "qpos")
    if q.ndim == 1:
        w, x, y, z = q[3:7].tolist()
        return w, x, y, z
    q = q[..., 3:7]
    return q[..., 0], q[..., 1], q[..., 2], q[..., 3]


def _cos(x: Any) -> Any:
    return math.cos(x) if type(x) is float else np.cos(x)


def _asin(x: Any) -> Any:
    """arcsin of x clipped to [-1, 1] (rounding can put a unit quaternion's product past 1)."""
    if type(x) is float:
        return math.asin(min(max(x, -1.0), 1.0))
    return np.arcsin(np.clip(x, -1.0, 1.0))


# --- measures --------------------------------------------------------------------------------


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


def joint_names(env: str) -> list[str]:
    """The env's hinge joints, in the order `joint_angles` returns them."""
    return list(layout(env).joints)


def _joint_index(env: str, names: Any) -> list[int]:
    table = layout(env).joints
    if names is None:
        return list(table.values())
    picked = [names] if isinstance(names, str) else list(names)
    unknown = [n for n in picked if n not in table]
    if unknown:
        known = ", ".join(table)
        raise ValueError(f"primitives: {env} has no joint {unknown[0]!r}; it has {known}")
    return [table[n] for n in picked]


def joint_angles(env: str, data: Mapping[str, Any], names: Any = None) -> Any:
    """Hinge angles (rad): all joints (see `joint_names`), the named ones, or one by name."""
    idx = _joint_index(env, names)
    out = _arr(data, "qpos")[..., idx]
    return _out(out[..., 0]) if isinstance(names, str) else out


def joint_speed(env: str, data: Mapping[str, Any]) -> Any:
    """Root-mean-square speed of the hinge joints (rad/s): 0 when the limbs are still."""
    lay = layout(env)
    shift = 1 if lay.root == FREE else 0  # a free joint has 7 qpos but 6 qvel entries
    dofs = [i - shift for i in lay.joints.values()]
    q = _arr(data, "qvel")[..., dofs]
    return _out(np.sqrt(np.mean(q * q, axis=-1)))


def feet_heights(env: str, data: Mapping[str, Any]) -> Any:
    """Height (m) of each foot's lowest point above the floor (the env spec names the feet)."""
    if not layout(env).feet:
        raise ValueError(f"primitives: {env} has no feet")
    return _arr(data, "feet_z")


def feet_contact(env: str, data: Mapping[str, Any]) -> Any:
    """1.0 for each foot touching the floor, else 0.0."""
    if not layout(env).feet:
        raise ValueError(f"primitives: {env} has no feet")
    return (_arr(data, "feet_contact") > 0.5).astype(np.float64)


def knee_heights(env: str, data: Mapping[str, Any]) -> Any:
    """Height (m) of each knee joint above the floor."""
    if not layout(env).knees:
        raise ValueError(f"primitives: {env} has no knees")
    return _arr(data, "knees_z")


def pole_angle(env: str, data: Mapping[str, Any]) -> Any:
    """Largest deviation of any pole link from vertical (rad)."""
    if env not in ("InvertedPendulum-v5", "InvertedDoublePendulum-v5"):
        raise ValueError(f"primitives: {env} has no pole")
    q = _arr(data, "qpos")
    if env == "InvertedPendulum-v5":
        return _out(np.abs(q[..., 1]))
    return _out(np.maximum(np.abs(q[..., 1]), np.abs(q[..., 1] + q[..., 2])))


def cart_position(env: str, data: Mapping[str, Any]) -> Any:
    """Cart position along the rail (m, 0 = middle)."""
    if env not in ("InvertedPendulum-v5", "InvertedDoublePendulum-v5"):
        raise ValueError(f"primitives: {env} has no cart")
    return _out(_arr(data, "qpos")[..., 0])


REACHER_LINKS = (0.1, 0.11)  # upper arm and forearm-to-fingertip lengths (m)


def fingertip_distance(env: str, data: Mapping[str, Any]) -> Any:
    """Reacher: distance (m) from the fingertip to the target."""
    if env != "Reacher-v5":
        raise ValueError(f"primitives: {env} has no target to reach")
    q = _arr(data, "qpos")
    a, b = REACHER_LINKS
    tip_x = a * np.cos(q[..., 0]) + b * np.cos(q[..., 0] + q[..., 1])
    tip_y = a * np.sin(q[..., 0]) + b * np.sin(q[..., 0] + q[..., 1])
    return _out(np.hypot(tip_x - q[..., 2], tip_y - q[..., 3]))


def wrap_angle(angle: Any) -> Any:
    """An angle (or angle difference) brought into [-pi, pi)."""
    return _out(np.mod(np.asarray(angle, dtype=np.float64) + math.pi, 2.0 * math.pi) - math.pi)


# --- judge-side summaries of a whole episode ---------------------------------------------------


def dominant_frequency(series: Any, dt: float) -> tuple[float, float]:
    """(frequency in Hz, share of the signal's power at it) of a T-step series: a steady gait
    puts most of a joint angle's power in one frequency (share near 1), aimless motion spreads it.
    Needs at least 16 steps; returns (0, 0) for a constant series."""
    x = np.asarray(series, dtype=np.float64).reshape(len(series), -1)
    if x.shape[0] < 16:
        return 0.0, 0.0
    x = x - x.mean(axis=0)
    power = (np.abs(np.fft.rfft(x, axis=0)) ** 2).sum(axis=1)[1:]  # without the constant term
    total = float(power.sum())
    if total <= 1e-12:
        return 0.0, 0.0
    k = int(np.argmax(power))
    # The peak and its two neighbours: a frequency between two bins splits its power.
    share = float(power[max(k - 1, 0) : k + 2].sum() / total)
    return float((k + 1) / (x.shape[0] * dt)), min(share, 1.0)


# --- reward forms, each in [0, 1] --------------------------------------------------------------


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
