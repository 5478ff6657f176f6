"""Measures of the limbs: hinge joint angles and speed, feet (height, contact) and knees, and
`dominant_frequency`, the rhythm of a series such as a joint angle over an episode.

Exported to reward and judge code by `primitives`; the positions of named body parts (head,
hands, feet, knees) are in `parts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from activities.behaviours.layout import FREE, layout
from activities.behaviours.parts import _out
from activities.behaviours.readings import _arr


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
