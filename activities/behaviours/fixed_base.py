"""Measures of the fixed-base envs: the inverted pendulums' pole and cart, and Reacher's
fingertip distance to its target.

Exported to reward and judge code by `primitives`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from activities.behaviours.parts import _out
from activities.behaviours.readings import _arr


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
