"""Hand-written knowledge that `spec` cannot read off the live model: what the Gymnasium v5
envs' info keys mean, and their reward / termination rules as text (weights filled in from the
env's own attributes). Keyed by env class name. Layouts and names come from the model, not here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

UNKNOWN_INFO = "see the Gymnasium docs"

# Default meanings; `_X_VEL` etc. are reused by the per-class overrides below.
_X_VEL = "torso x velocity over the step: (x after - x before) / dt (world)"
INFO_MEANINGS: dict[str, str] = {
    "x_position": "torso x after the step (world) = qpos[0]",
    "y_position": "torso y after the step (world) = qpos[1]",
    "distance_from_origin": "torso distance from the world origin in the x-y plane",
    "z_distance_from_origin": "torso height minus its height at reset",
    "x_velocity": _X_VEL,
    "y_velocity": "torso y velocity over the step (world)",
    "tendon_length": "length of each tendon",
    "tendon_velocity": "lengthening speed of each tendon",
    "reward_forward": "env's forward term: forward_reward_weight * x_velocity",
    "reward_ctrl": "env's control cost term (<= 0)",
    "reward_contact": "env's contact-force cost term (<= 0)",
    "reward_survive": "env's alive bonus: healthy_reward while healthy, else 0",
    "reward_linup": "env's stand-up term: torso height qpos[2] / physics timestep",
    "reward_quadctrl": "env's control cost term (<= 0)",
    "reward_impact": "env's contact-force (impact) cost term (<= 0)",
    "reward_dist": "env's distance term: -weight * |fingertip - target| (<= 0)",
    "distance_penalty": "env's term -(0.01 * tip_x^2 + (tip_z - 2)^2): keep the tip high, centred",
    "velocity_penalty": "env's term -(1e-3 * qvel[1]^2 + 5e-3 * qvel[2]^2)",
}
_COM_VEL = "whole-body centre-of-mass {} velocity over the step (world)"
INFO_OVERRIDES: dict[tuple[str, str], str] = {
    ("HumanoidEnv", "x_velocity"): _COM_VEL.format("x"),
    ("HumanoidEnv", "y_velocity"): _COM_VEL.format("y"),
    ("HopperEnv", "z_distance_from_origin"): "torso height qpos[1] minus its value at reset",
    ("Walker2dEnv", "z_distance_from_origin"): "torso height qpos[1] minus its value at reset",
    ("HumanoidStandupEnv", "z_distance_from_origin"): "torso height qpos[2] minus its reset value",
    ("InvertedPendulumEnv", "reward_survive"): "1 while the pole is up (|qpos[1]| <= 0.2), else 0",
    ("InvertedDoublePendulumEnv", "reward_survive"): "healthy_reward while not terminated, else 0",
}

# Constants the envs hard-code in `_get_obs` (not exposed as attributes).
QVEL_CLIP: dict[str, tuple[float, float]] = {
    "HopperEnv": (-10.0, 10.0),
    "Walker2dEnv": (-10.0, 10.0),
}
# These always end an episode when the pole falls; they have no `_terminate_when_unhealthy`.
ALWAYS_TERMINATES = frozenset(("InvertedPendulumEnv", "InvertedDoublePendulumEnv"))


def terminates_early(u: Any) -> bool:
    """Whether an episode of the unwrapped env `u` can end before its time limit (a fall, a
    dropped pole); HalfCheetah, Swimmer and Reacher never do."""
    return bool(getattr(u, "_terminate_when_unhealthy", type(u).__name__ in ALWAYS_TERMINATES))


def _g(x: Any) -> str:
    return f"{x:g}" if isinstance(x, int | float) else str(x)


def _rng(r: tuple[float, float]) -> tuple[str, str]:
    return _g(r[0]), _g(r[1])


def _locomotion(u: Any, extra: str = "") -> str:
    text = f"{_g(u._forward_reward_weight)} * x_velocity"
    if hasattr(u, "_healthy_reward"):
        text += f" + {_g(u._healthy_reward)} * is_healthy"
    return text + f" - {_g(u._ctrl_cost_weight)} * sum(action^2)" + extra


def _ant(u: Any) -> str:
    lo, hi = _rng(u._contact_force_range)
    cost = f" - {_g(u._contact_cost_weight)} * sum(clip(cfrc_ext, {lo}, {hi})^2)"
    return _locomotion(u, cost)


def _humanoid(u: Any) -> str:
    lo, hi = _rng(u._contact_cost_range)
    return _locomotion(u, f" - clip({_g(u._contact_cost_weight)} * sum(cfrc_ext^2), {lo}, {hi})")


def _standup(u: Any) -> str:
    lo, hi = _rng(u._impact_cost_range)
    return (
        f"qpos[2] / {_g(u.model.opt.timestep)} - {_g(u._ctrl_cost_weight)} * sum(ctrl^2)"
        f" - clip({_g(u._impact_cost_weight)} * sum(cfrc_ext^2), {lo}, {hi}) + 1"
    )


def _reacher(u: Any) -> str:
    return (
        f"-{_g(u._reward_dist_weight)} * |xpos(fingertip) - xpos(target)|"
        f" - {_g(u._reward_control_weight)} * sum(action^2)"
    )


def _double(u: Any) -> str:
    return (
        f"{_g(u._healthy_reward)} * (not terminated) - (0.01 * tip_x^2 + (tip_z - 2)^2)"
        " - (1e-3 * qvel[1]^2 + 5e-3 * qvel[2]^2), tip = world position of site 'tip'"
    )


REWARD_FORMULAS: dict[str, Callable[[Any], str]] = {
    "HalfCheetahEnv": _locomotion,
    "AntEnv": _ant,
    "HopperEnv": _locomotion,
    "Walker2dEnv": _locomotion,
    "HumanoidEnv": _humanoid,
    "HumanoidStandupEnv": _standup,
    "SwimmerEnv": _locomotion,
    "ReacherEnv": _reacher,
    "InvertedPendulumEnv": lambda u: "1 while |qpos[1]| <= 0.2 (pole upright), else 0",
    "InvertedDoublePendulumEnv": _double,
}


def _z(u: Any, i: int, op: str = "<") -> str:
    lo, hi = _rng(u._healthy_z_range)
    return f"{lo} {op} qpos[{i}] (torso z) {op} {hi}"


def _hopper(u: Any) -> str:
    alo, ahi = _rng(u._healthy_angle_range)
    text = f"{_z(u, 1)} and {alo} < qpos[2] (torso pitch) < {ahi}"
    if hasattr(u, "_healthy_state_range"):
        slo, shi = _rng(u._healthy_state_range)
        text += f" and every qpos[2:], qvel entry in ({slo}, {shi})"
    return text


HEALTHY_RULES: dict[str, Callable[[Any], str]] = {
    "AntEnv": lambda u: f"qpos, qvel finite and {_z(u, 2, '<=')}",
    "HopperEnv": _hopper,
    "Walker2dEnv": _hopper,
    "HumanoidEnv": lambda u: _z(u, 2),
    "InvertedPendulumEnv": lambda u: "obs finite and |qpos[1]| (pole angle) <= 0.2 rad",
    "InvertedDoublePendulumEnv": lambda u: "world z of site 'tip' > 1 m",
}
