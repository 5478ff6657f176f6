"""Which primitives apply to an env, as the env spec lists them for LLM authors.

Found by calling each one on a sample of the env's data (zeros of the right shapes): a primitive
that does not apply raises ValueError naming what the body lacks, so the list never drifts from
the code.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

import activities.behaviours.primitives as P
from activities.behaviours.layout import layout
from activities.envs.catalog import facts

# Values for a reward form's own parameters when it is tried on sample data.
_SAMPLE_ARGS: dict[str, Any] = {
    "target": 1.0,
    "direction": 1.0,
    "margin": 0.5,
    "lower": 0.5,
    "radius": 0.1,
    "x": 0.0,
    "y": 0.0,
    "feet_down": 1.0,
    "min_uprightness": 0.9,
}


@dataclass(frozen=True)
class Listed:
    """One primitive as the env spec shows it."""

    name: str
    signature: str
    doc: str  # the docstring, on one line
    reward: bool  # a reward form (in [0, 1]) rather than a measure


def _sample(env_id: str) -> dict[str, Any]:
    f, lay = facts(env_id), layout(env_id)
    data: dict[str, Any] = {"qpos": np.zeros(f.nq), "qvel": np.zeros(f.nv)}
    if f.locomotion:
        data["x_velocity"] = 0.0
    if lay.feet:
        data["feet_z"] = np.zeros(len(lay.feet))
        data["feet_contact"] = np.zeros(len(lay.feet))
    if lay.knees:
        data["knees_z"] = np.zeros(len(lay.knees))
    if lay.parts:
        data["parts_pos"] = np.zeros(3 * len(lay.parts))
    return data


def sample_kwargs(fn: Any, env_id: str) -> dict[str, Any] | None:
    """Arguments to try a measure or reward form with on an env (after env and data); None
    where it names a body part the env does not have."""
    params = list(inspect.signature(fn).parameters)
    kwargs = {p: _SAMPLE_ARGS[p] for p in params[2:] if p in _SAMPLE_ARGS}
    if "targets" in params:
        kwargs["targets"] = {P.joint_names(env_id)[0]: 0.0} if layout(env_id).joints else {}
    parts = list(layout(env_id).parts)
    for i, name in enumerate(p for p in ("part", "a", "b") if p in params):
        if not parts:
            return None
        kwargs[name] = parts[min(i, len(parts) - 1)]
    return kwargs


def _applies(fn: Any, env_id: str, data: dict[str, Any]) -> bool:
    params = list(inspect.signature(fn).parameters)
    if params == ["env"]:
        return bool(fn(env_id))  # a list of names (joints, parts): listed where there are some
    if params[:2] != ["env", "data"]:
        return True  # env-independent (tolerance, control_cost, oscillation_reward, ...)
    kwargs = sample_kwargs(fn, env_id)
    if kwargs is None:
        return False
    try:
        fn(env_id, data, **kwargs)
    except ValueError:
        return False
    return True


def _param(p: inspect.Parameter) -> str:
    """A parameter as a person writes the call: a name, and its default if it has one."""
    if p.default is inspect.Parameter.empty:
        return p.name
    default = "P.INF" if p.default == float("inf") else repr(p.default)
    return f"{p.name}={default}"


def _short(fn: Any) -> str:
    """The call without the (env, data) every measure takes: `height_reward(lower, ...)`."""
    params = list(inspect.signature(fn).parameters.values())
    if [p.name for p in params[:2]] == ["env", "data"]:
        params = params[2:]
    return f"{fn.__name__}({', '.join(_param(p) for p in params)})"


@cache
def primitives_for(env_id: str) -> tuple[Listed, ...]:
    """The primitives an env supports, measures first."""
    data = _sample(env_id)
    out = []
    for name in P.__all__:
        fn = getattr(P, name)
        if not callable(fn) or not _applies(fn, env_id, data):
            continue
        doc = " ".join((inspect.getdoc(fn) or "").split())
        sig = "(" + ", ".join(_param(p) for p in inspect.signature(fn).parameters.values()) + ")"
        out.append(Listed(name, f"P.{name}{sig}", doc, name.endswith("_reward")))
    return tuple(sorted(out, key=lambda item: item.reward))


def _takes_body(fn: Any) -> bool:
    return list(inspect.signature(fn).parameters)[:2] == ["env", "data"]


def describe(env_id: str) -> list[str]:
    """Markdown lines for the env spec, kept short (it goes into every prompt): how to call the
    library, then the measures, reward forms and helpers that apply to this env."""
    lines = [
        "`import primitives as P` measures the body, so you need not index qpos yourself. "
        "Measures and reward forms take the env id and the step's `info` (a number back) or a "
        "judge's `trajectory` (one value per step) first: `P.height(ENV, info)`. Signs: +x is "
        "forward, +y left; uprightness is 1 upright, 0 on its side, -1 upside down; pitch is "
        "nose-up positive; heading and yaw rate are counter-clockwise positive. Reward forms "
        "return [0, 1]: 1 where the behaviour is, 0.1 at `margin` outside it (velocity and "
        "yaw-rate forms rise linearly from 0 at rest to 1 at `target`).",
    ]
    lay = layout(env_id)
    if lay.feet:
        lines.append(f"Feet, in the order the foot primitives return them: {', '.join(lay.feet)}.")
    if lay.knees:
        lines.append(f"Knees, in order: {', '.join(lay.knees)}.")
    fns = [getattr(P, item.name) for item in primitives_for(env_id)]
    groups = (
        ("measures", [f for f in fns if _takes_body(f) and not f.__name__.endswith("_reward")]),
        ("reward forms", [f for f in fns if _takes_body(f) and f.__name__.endswith("_reward")]),
        ("helpers", [f for f in fns if not _takes_body(f)]),
    )
    for title, group in groups:
        lines.append(f"- {title}: " + ", ".join(f"`{_short(f)}`" for f in group))
    return lines
