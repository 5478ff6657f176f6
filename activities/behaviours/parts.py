"""Primitives of named body parts (head, hands, each foot and knee): heights and spreads.

Re-exported by `primitives` (reward and judge code call them as `P.part_height(...)`). They read
`parts_pos`, which the trusted side (sensors.py) adds to a step's info and records in
evaluation trajectories: x, y, z of each part of the env's layout, one after another. A pose is
a few of these at once: "arms out to the sides" is the hands far apart at shoulder height, "a
wide stance" the feet far apart, "head lowered" the head below its standing height.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from activities.behaviours.layout import layout
from activities.behaviours.shaping import tolerance

INF = float("inf")


def part_names(env: str) -> list[str]:
    """The env's named parts, in the order `parts_pos` holds them."""
    return list(layout(env).parts)


def _row(env: str, part: str) -> int:
    names = part_names(env)
    if not names:
        raise ValueError(f"primitives: {env} has no named parts")
    if part not in names:
        raise ValueError(f"primitives: {env} has no part {part!r}; it has {', '.join(names)}")
    return names.index(part)


def _positions(env: str, data: Mapping[str, Any]) -> np.ndarray:
    """(..., parts, 3) positions from the flat `parts_pos` of a step or a trajectory."""
    try:
        flat = np.asarray(data["parts_pos"], dtype=np.float64)
    except KeyError:
        raise ValueError(
            "primitives: data has no 'parts_pos' (pass the step's info or the trajectory)"
        ) from None
    return flat.reshape(*flat.shape[:-1], len(layout(env).parts), 3)


def _out(x: Any) -> Any:
    """A float for one step's value, the array for a trajectory's (checked cheapest first:
    this runs several times per step of every reward)."""
    if type(x) is float:
        return x
    if type(x) is np.ndarray:
        return x if x.ndim else float(x)
    return float(x) if np.ndim(x) == 0 else x


def part_height(env: str, data: Mapping[str, Any], part: str) -> Any:
    """Height (m) of a named part above the floor (a foot at its lowest point)."""
    row = _row(env, part)
    flat = data.get("parts_pos") if isinstance(data, dict) else None
    if type(flat) is np.ndarray and flat.ndim == 1 and flat.size == 3 * len(layout(env).parts):
        return float(flat[3 * row + 2])  # one step's flat x, y, z per part: no reshape
    return _out(_positions(env, data)[..., row, 2])


def part_distance(env: str, data: Mapping[str, Any], a: str, b: str) -> Any:
    """Distance (m) over the ground between two named parts: hands or feet apart."""
    ra, rb = _row(env, a), _row(env, b)
    pos = _positions(env, data)
    d = pos[..., ra, :2] - pos[..., rb, :2]
    return _out(np.hypot(d[..., 0], d[..., 1]))


def part_height_reward(
    env: str,
    data: Mapping[str, Any],
    part: str,
    lower: float,
    upper: float = INF,
    margin: float = 0.2,
) -> Any:
    """1 with the part between `lower` and `upper` m up, 0.1 at `margin` m outside."""
    return tolerance(part_height(env, data, part), lower, upper, margin=margin)


def part_distance_reward(
    env: str,
    data: Mapping[str, Any],
    a: str,
    b: str,
    lower: float,
    upper: float = INF,
    margin: float = 0.2,
) -> Any:
    """1 with parts `a` and `b` between `lower` and `upper` m apart over the ground, 0.1 at
    `margin` m outside."""
    return tolerance(part_distance(env, data, a, b), lower, upper, margin=margin)
