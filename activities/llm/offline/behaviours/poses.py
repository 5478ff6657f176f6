"""Poses of named body parts as reward terms and criteria: arms out to the sides, arms up or
down, head lowered or raised, one knee raised, a wide or narrow stance, the rear or front feet
off the ground, standing on one foot, leaning forward, back or to a side.

Each pose is a bounded term on the part primitives (P.part_height, P.part_distance), the knee
and torso measures, and a criterion measured the same way over the second half of the episode
(or of its phase). Heights are relative where the body allows (hands against the head), so a
pose reads the same whether the body stands tall or crouches.

This module holds the registry of poses by name (`POSES`) and adds a step's poses to a builder
(`apply_poses`); `pose_tables` holds the per-env numbers and the `PoseTerm` each pose gives,
`limb_poses` the poses of the head, arms, knees and feet, `torso_poses` those of the torso
(height, level, lean).
"""

from __future__ import annotations

from collections.abc import Callable

import activities.llm.offline.behaviours.library as lib
from activities.llm.offline.behaviours.compose import QUALIFIER, Builder
from activities.llm.offline.behaviours.limb_poses import (
    _ant_foot_up,
    _arms_down,
    _arms_out,
    _arms_up,
    _feet_up,
    _head,
    _knee_up,
    _one_foot,
    _stance,
)
from activities.llm.offline.behaviours.measures import Measure
from activities.llm.offline.behaviours.pose_tables import ANT_FEET, PoseTerm
from activities.llm.offline.behaviours.torso_poses import _horizontal, _lean, _level, _torso_height

POSES: dict[str, Callable[[str, float | None], list[PoseTerm]]] = {
    "arms_out": lambda env, _: _arms_out(env),
    "arms_up": lambda env, _: _arms_up(env),
    "arms_down": lambda env, _: _arms_down(env),
    "head_down": lambda env, _: _head(env, True),
    "head_up": lambda env, _: _head(env, False),
    "knee_up": lambda env, _: _knee_up(env),
    "wide_stance": lambda env, _: _stance(env, True),
    "narrow_stance": lambda env, _: _stance(env, False),
    "rear_feet_up": lambda env, _: _feet_up(env, "rear"),
    "front_feet_up": lambda env, _: _feet_up(env, "front"),
    "one_foot": lambda env, _: _one_foot(env),
    "stand_left": lambda env, _: _one_foot(env, "left"),
    "stand_right": lambda env, _: _one_foot(env, "right"),
    "torso_low": lambda env, _: _torso_height(env, True),
    "torso_tall": lambda env, _: _torso_height(env, False),
    "level": lambda env, _: _level(env),
    "horizontal": lambda env, _: _horizontal(env),
    **{
        f"{f}_up": (lambda env, _, f=f: _ant_foot_up(env, f))  # type: ignore[misc]
        for f in ANT_FEET
    },
    "lean_forward": lambda env, a: _lean(env, "forward", a),
    "lean_back": lambda env, a: _lean(env, "back", a),
    "lean_left": lambda env, a: _lean(env, "left", a),
    "lean_right": lambda env, a: _lean(env, "right", a),
}


def apply_poses(b: Builder, weight: float) -> None:
    """Add the step's poses to the builder: a term and a criterion each."""
    for name in b.r.poses:
        for i, pt in enumerate(POSES[name](b.env, b.r.angle)):
            term = pt.name or (name if i == 0 else f"{name}_{i + 1}")
            b.term(term, pt.call, weight, QUALIFIER, r"\pi_t", pt.meaning)
            criterion = lib.crit(
                term,
                pt.criterion,
                pt.metric,
                pt.target,
                pt.direction,
                pt.tolerance,
                # A pose beside another behaviour counts less than the behaviour itself.
                weight=(1.5 if weight >= 1.0 else 1.0) if i == 0 else 1.0,
            )
            if pt.metric:
                b.crit(criterion, term)
            else:
                measure = Measure(pt.series, "late_mean", (), pt.unit, pt.label)
                b.crit(criterion, term, measure=measure)
