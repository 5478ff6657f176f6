"""How the primitives read `data`: a step's info or a trajectory, one helper per access.

Shared by the measure modules (`torso`, `rotation`, `limbs`, `fixed_base`): pull an array or an
env info value out of `data` with the primitives' error message, check the env's root kind, take
one column (a plain float for one step, a column for a trajectory), the root quaternion, and the
cos and arcsin that keep a step's floats plain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from activities.behaviours.layout import layout


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
