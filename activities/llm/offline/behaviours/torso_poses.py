"""Poses of the torso as reward terms and criteria: held low or tall, level, horizontal, and
leaning forward, back or to a side.

The numbers per env are in `pose_tables`, and `poses` lists these by name.
"""

from __future__ import annotations

from activities.behaviours.layout import FREE, PLANAR
from activities.llm.offline.behaviours.compose import Direction
from activities.llm.offline.behaviours.pose_tables import (
    LEAN,
    LEVEL,
    TORSO_LOW,
    TORSO_TALL,
    PoseTerm,
)
from activities.llm.offline.words.refusals import NotExpressible


def _torso_height(env: str, low: bool) -> list[PoseTerm]:
    bound = (TORSO_LOW if low else TORSO_TALL).get(env)
    if bound is None:
        word = "low" if low else "tall"
        raise NotExpressible(
            f"{env} has no torso height to keep {word}; the bodies that do: "
            f"{', '.join(TORSO_LOW if low else TORSO_TALL)}"
        )
    height = "P.height(ENV, {s})"
    # Paid in full 3 cm inside the bound, as the other poses: the trade-off with the behaviour
    # settles just outside the bound otherwise.
    direction: Direction
    if low:
        call = f"P.tolerance({height.format(s='info')}, 0.0, {bound - 0.03:g}, margin=0.15)"
        meaning, direction = f"torso at most {bound - 0.03:g} m up", "at_most"
        said = f"torso at most {bound:g} m up (low) over the second half"
    else:
        call = f"P.tolerance({height.format(s='info')}, {bound + 0.03:g}, P.INF, margin=0.15)"
        meaning, direction = f"torso at least {bound + 0.03:g} m up", "at_least"
        said = f"torso at least {bound:g} m up (tall) over the second half"
    return [
        PoseTerm(
            call,
            meaning,
            said,
            height.format(s="t"),
            bound,
            direction,
            0.0,
            "m",
            "torso height",
            "late_mean_height",
        )
    ]


def _level(env: str) -> list[PoseTerm]:
    from activities.behaviours.layout import layout

    root = layout(env).root
    if root not in (PLANAR, FREE) or env == "HumanoidStandup-v5":
        raise NotExpressible(f"{env} has no torso to keep level")
    tilt = "np.abs(P.pitch(ENV, {s}))"
    if root == FREE:
        tilt = "np.maximum(np.abs(P.pitch(ENV, {s})), np.abs(P.roll(ENV, {s})))"
    return [
        PoseTerm(
            f"P.tolerance({tilt.format(s='info')}, 0.0, {LEVEL - 0.05:g}, margin=0.3)",
            "torso level (little pitch or roll)",
            f"torso within {LEVEL:g} rad of level over the second half",
            tilt.format(s="t"),
            LEVEL,
            "at_most",
            0.0,
            "rad",
            "torso tilt from level",
        )
    ]


def _horizontal(env: str) -> list[PoseTerm]:
    """A horizontal torso: level on a body that stands on all fours; lying down on the others."""
    if env not in ("Ant-v5", "HalfCheetah-v5"):
        raise NotExpressible(
            f"{env} stands with its torso upright: a horizontal torso is lying down (say 'lie "
            "down'); Ant and HalfCheetah hold theirs level"
        )
    return _level(env)


def _lean(env: str, way: str, angle: float | None) -> list[PoseTerm]:
    from activities.behaviours.layout import layout

    root = layout(env).root
    a = angle if angle is not None else LEAN
    if way in ("left", "right"):
        if root != FREE or env == "HumanoidStandup-v5":
            raise NotExpressible(f"{env} cannot lean to a side (Ant and Humanoid can)")
        sign = 1.0 if way == "left" else -1.0
        measure = "P.roll(ENV, {s})"
    else:
        if root not in (PLANAR, FREE) or env == "HumanoidStandup-v5":
            raise NotExpressible(f"{env} has no torso to lean")
        sign = -1.0 if way == "forward" else 1.0  # pitch is nose-up positive
        measure = "P.pitch(ENV, {s})"
    target = round(sign * a, 4)
    # The built-in metric of a free body's signed pitch over the second half says the same.
    metric = "late_torso_pitch_up" if root == FREE and way in ("forward", "back") else ""
    return [
        PoseTerm(
            f"P.tolerance({measure.format(s='info')}, {target - 0.1:g}, {target + 0.1:g}, "
            "margin=0.3)",
            f"leaning {way} {a:.2g} rad",
            f"torso leaning {way} {a:.2g} rad (within 0.15) over the second half",
            measure.format(s="t"),
            target,
            "near",
            0.15,
            "rad",
            f"lean {way}",
            metric,
        )
    ]
