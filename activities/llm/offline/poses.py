"""Poses of named body parts as reward terms and criteria: arms out to the sides, arms up or
down, head lowered or raised, one knee raised, a wide or narrow stance, the rear or front feet
off the ground, standing on one foot, leaning forward, back or to a side.

Each pose is a bounded term on the part primitives (P.part_height, P.part_distance), the knee
and torso measures, and a criterion measured the same way over the second half of the episode
(or of its phase). Heights are relative where the body allows (hands against the head), so a
pose reads the same whether the body stands tall or crouches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import activities.llm.offline.library as lib
from activities.behaviours.layout import FREE, PLANAR
from activities.llm.offline.compose import QUALIFIER, Builder, Direction
from activities.llm.offline.judge import Measure
from activities.llm.offline.refusals import NotExpressible

HANDS = ("left_hand", "right_hand")
LEAN = 0.35  # rad (20 degrees): a lean people see, inside every body's healthy range
# Heights (m) of the head standing, and of a lowered or raised head, per env.
HEAD = {"Humanoid-v5": (1.35, 1.5), "HalfCheetah-v5": (0.45, 0.9)}
# Knee heights of one raised knee (the high-knees lift).
KNEE_UP = {
    "Walker2d-v5": 0.9,
    "Humanoid-v5": 0.75,
    "HumanoidStandup-v5": 0.75,
    "HalfCheetah-v5": 0.5,
}
# (part a, part b, wide at least, narrow at most) of a stance, per env.
STANCE = {
    "Humanoid-v5": ("left_foot", "right_foot", 0.45, 0.1),
    "HumanoidStandup-v5": ("left_foot", "right_foot", 0.45, 0.1),
    "Walker2d-v5": ("left_foot", "right_foot", 0.4, 0.1),
    "HalfCheetah-v5": ("back_foot", "front_foot", 1.35, 0.9),
}
FEET: dict[str, dict[str, tuple[str, ...]]] = {
    "Ant-v5": {
        "rear": ("back_left_foot", "back_right_foot"),
        "front": ("front_left_foot", "front_right_foot"),
    },
    "HalfCheetah-v5": {"rear": ("back_foot",), "front": ("front_foot",)},
}
ONE_FOOT = {"Humanoid-v5": ("left_foot", "right_foot"), "Walker2d-v5": ("left_foot", "right_foot")}
ANT_FEET = ("front_left_foot", "front_right_foot", "back_left_foot", "back_right_foot")
# Torso heights (m): a low torso at most, a tall one at least, inside each env's healthy range.
# Measured at rest (zero action, 1 s): Ant 0.42, HalfCheetah 0.57; walking policies carry the
# Ant's torso at about 0.55-0.65 m and the cheetah's at 0.6-0.7 m. Humanoid-v5 ends an episode
# below 1.0 m, Walker2d-v5 below 0.8 m and Hopper-v5 below 0.7 m.
TORSO_LOW = {
    "Ant-v5": 0.45,
    "HalfCheetah-v5": 0.5,
    "Humanoid-v5": 1.15,
    "Walker2d-v5": 1.0,
    "Hopper-v5": 1.0,
}
TORSO_TALL = {
    "Ant-v5": 0.7,
    "Humanoid-v5": 1.3,
    "HumanoidStandup-v5": 1.2,
    "Walker2d-v5": 1.2,
    "Hopper-v5": 1.25,
}
LEVEL = 0.15  # rad (9 degrees): the most pitch or roll a level torso shows


@dataclass(frozen=True)
class PoseTerm:
    """A pose's reward term (an expression over ENV and info) and its criterion."""

    call: str
    meaning: str
    criterion: str  # description
    series: str  # the same measure over a trajectory `t`
    target: float
    direction: Direction
    tolerance: float
    unit: str
    label: str
    metric: str = ""  # a built-in metric that measures it (then no judge code is needed)
    name: str = ""  # the term's and criterion's name when a pose has several (else the pose's)


def _parts(env: str, *names: str) -> None:
    from activities.behaviours.layout import layout

    missing = [n for n in names if n not in layout(env).parts]
    if missing:
        raise NotExpressible(f"{env} has no {missing[0].replace('_', ' ')}")


def _hands_minus_head(which: str, side: str = "t") -> str:
    hands = [f"P.part_height(ENV, {side}, '{h}')" for h in HANDS]
    if which == "mean":
        joined = f"0.5 * ({hands[0]} + {hands[1]})"
    else:
        joined = f"np.{which}imum({hands[0]}, {hands[1]})"
    return f"{joined} - P.part_height(ENV, {side}, 'head')"


def _arms_out(env: str) -> list[PoseTerm]:
    _parts(env, *HANDS, "head")
    spread = "P.part_distance(ENV, {s}, 'left_hand', 'right_hand')"
    level = _hands_minus_head("mean", "{s}")
    return [
        PoseTerm(
            f"P.tolerance({spread.format(s='info')}, 1.0, P.INF, margin=0.4)",
            "hands at least 1 m apart",
            "hands at least 0.9 m apart over the second half",
            spread.format(s="t"),
            0.9,
            "at_least",
            0.0,
            "m",
            "distance between the hands",
        ),
        PoseTerm(
            f"P.tolerance({level.format(s='info')}, -0.45, -0.05, margin=0.3)",
            "hands at shoulder height",
            "hands 0.05-0.45 m below the head (shoulder height) over the second half",
            level.format(s="t"),
            -0.25,
            "near",
            0.2,
            "m",
            "hand height against the head",
            name="hands_at_shoulders",
        ),
    ]


def _arms_up(env: str) -> list[PoseTerm]:
    _parts(env, *HANDS, "head")
    up = _hands_minus_head("min", "{s}")
    return [
        PoseTerm(
            f"P.tolerance({up.format(s='info')}, 0.05, P.INF, margin=0.3)",
            "both hands above the head",
            "the lower hand above the head over the second half",
            up.format(s="t"),
            0.0,
            "at_least",
            0.0,
            "m",
            "lower hand's height above the head",
        )
    ]


def _arms_down(env: str) -> list[PoseTerm]:
    _parts(env, *HANDS, "head")
    down = _hands_minus_head("max", "{s}")
    return [
        PoseTerm(
            f"P.tolerance({down.format(s='info')}, -P.INF, -0.5, margin=0.3)",
            "hands low at the sides",
            "the higher hand at least 0.45 m below the head over the second half",
            down.format(s="t"),
            -0.45,
            "at_most",
            0.0,
            "m",
            "higher hand's height against the head",
        )
    ]


def _head(env: str, down: bool) -> list[PoseTerm]:
    if env == "HumanoidStandup-v5":
        raise NotExpressible(
            "HumanoidStandup-v5 starts lying down with its head on the floor: a lowered or "
            "raised head says nothing there (stand up first)"
        )
    _parts(env, "head")
    low, high = HEAD[env]
    head = "P.part_height(ENV, {s}, 'head')"
    # The reward pays in full 5 cm inside the criterion's bound, like every other pose here:
    # bounded at the target itself, the trade-off with speed settles just outside it. A lowered
    # head pays less as the torso tips (0.1 at uprightness 0.3, nothing on its back): paid
    # whatever the tilt, a running cheetah pitched 45 degrees nose-down for it (uprightness
    # 0.71 against at least 0.8); with this, one of two 1M-step seeds ran 2.8 m/s, head 0.25 m,
    # uprightness 0.85 (the other stayed level, head 0.58 m). A steeper gate (0.1 at 0.6)
    # kept both level with the head up; a steep upright term instead flipped both over.
    if down:
        return [
            PoseTerm(
                f"P.tolerance({head.format(s='info')}, -P.INF, {low - 0.05:g}, margin=0.2)"
                " * P.tolerance(P.uprightness(ENV, info), 0.9, P.INF, margin=0.6)",
                f"head below {low - 0.05:g} m, torso near level",
                f"head at most {low:g} m up over the second half",
                head.format(s="t"),
                low,
                "at_most",
                0.0,
                "m",
                "head height",
            )
        ]
    return [
        PoseTerm(
            f"P.tolerance({head.format(s='info')}, {high + 0.05:g}, P.INF, margin=0.2)",
            f"head above {high + 0.05:g} m",
            f"head at least {high:g} m up over the second half",
            head.format(s="t"),
            high,
            "at_least",
            0.0,
            "m",
            "head height",
        )
    ]


def _knee_up(env: str) -> list[PoseTerm]:
    lift = KNEE_UP.get(env)
    if lift is None:
        raise NotExpressible(f"raising one knee needs two legs with knees; not {env}")
    return [
        PoseTerm(
            f"P.knee_height_reward(ENV, info, lower={lift:g}, margin=0.2)",
            f"the higher knee at least {lift:g} m up",
            f"the higher knee averages at least {lift - 0.1:g} m",
            "np.max(P.knee_heights(ENV, t), axis=-1)",
            lift - 0.1,
            "at_least",
            0.0,
            "m",
            "mean height of the higher knee",
            "mean_peak_knee_height",
        )
    ]


def _stance(env: str, wide: bool) -> list[PoseTerm]:
    found = STANCE.get(env)
    if found is None:
        raise NotExpressible(
            f"a stance needs two feet side by side (Humanoid, Walker2d); not {env}"
        )
    a, b, far, near = found
    apart = f"P.part_distance(ENV, {{s}}, '{a}', '{b}')"
    if wide:
        return [
            PoseTerm(
                f"P.tolerance({apart.format(s='info')}, {far:g}, P.INF, margin=0.2)",
                f"feet at least {far:g} m apart",
                f"feet at least {far - 0.05:g} m apart over the second half",
                apart.format(s="t"),
                far - 0.05,
                "at_least",
                0.0,
                "m",
                "distance between the feet",
            )
        ]
    return [
        PoseTerm(
            f"P.tolerance({apart.format(s='info')}, 0.0, {near:g}, margin=0.2)",
            f"feet within {near:g} m",
            f"feet at most {near + 0.05:g} m apart over the second half",
            apart.format(s="t"),
            near + 0.05,
            "at_most",
            0.0,
            "m",
            "distance between the feet",
        )
    ]


def _feet_up(env: str, which: str) -> list[PoseTerm]:
    feet = FEET.get(env, {}).get(which)
    if feet is None:
        raise NotExpressible(f"{env} has no {which} legs to lift (Ant and HalfCheetah do)")
    lowest = ", ".join(f"P.part_height(ENV, {{s}}, '{f}')" for f in feet)
    low = f"np.minimum({lowest})" if len(feet) == 2 else lowest
    # Legs in the air on a body lying on its back are not this pose: judged upright only.
    judged = f"{low.format(s='t')} * (P.uprightness(ENV, t) > 0.5)"
    # Flailing legs leave the floor now and then: a lifted foot is held well clear of it.
    return [
        PoseTerm(
            f"P.tolerance({low.format(s='info')}, 0.25, P.INF, margin=0.15)",
            f"{which} feet off the ground",
            f"the lower {which} foot at least 0.2 m up over the second half, upright",
            judged,
            0.2,
            "at_least",
            0.0,
            "m",
            f"height of the lower {which} foot",
        )
    ]


def _one_foot(env: str, standing: str = "") -> list[PoseTerm]:
    if env == "Ant-v5" and not standing:
        return _ant_one_foot()
    feet = ONE_FOOT.get(env)
    if feet is None:
        raise NotExpressible(f"standing on one foot needs two legs (Humanoid, Walker2d); not {env}")
    if standing:
        return _on_foot(env, standing)
    a, b = (f"P.part_height(ENV, {{s}}, '{f}')" for f in feet)
    high = f"np.maximum({a}, {b})"
    low = f"np.minimum({a}, {b})"
    return [
        PoseTerm(
            f"P.tolerance({high.format(s='info')}, 0.15, P.INF, margin=0.1)"
            f" * P.tolerance({low.format(s='info')}, -P.INF, 0.05, margin=0.1)",
            "one foot lifted, the other down",
            "the higher foot at least 0.12 m up over the second half",
            high.format(s="t"),
            0.12,
            "at_least",
            0.0,
            "m",
            "height of the higher foot",
        )
    ]


def _on_foot(env: str, standing: str) -> list[PoseTerm]:
    """Standing on the named foot: the other one lifted, this one down."""
    other = "right" if standing == "left" else "left"
    up, down = (f"P.part_height(ENV, {{s}}, '{side}_foot')" for side in (other, standing))
    return [
        PoseTerm(
            f"P.tolerance({up.format(s='info')}, 0.15, P.INF, margin=0.1)"
            f" * P.tolerance({down.format(s='info')}, -P.INF, 0.05, margin=0.1)",
            f"the {other} foot lifted, the {standing} one down",
            f"the {other} foot at least 0.12 m up over the second half",
            up.format(s="t"),
            0.12,
            "at_least",
            0.0,
            "m",
            f"height of the {other} foot",
        )
    ]


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


def _ant_foot_up(env: str, foot: str) -> list[PoseTerm]:
    """One named foot of four held up; the body upright on the other three."""
    if env != "Ant-v5":
        raise NotExpressible(f"{env} has no {foot.replace('_', ' ')} (Ant-v5 has four legs)")
    return _feet_lifted(foot.replace("_foot", "").replace("_", " "), f"'{foot}'", (foot,))


def _ant_one_foot() -> list[PoseTerm]:
    """Any one foot of four held up: standing on three legs."""
    heights = ", ".join(f"P.part_height(ENV, {{s}}, '{f}')" for f in ANT_FEET)
    return _feet_lifted("highest", "", ANT_FEET, f"np.max(np.stack([{heights}]), axis=0)")


def _feet_lifted(which: str, label: str, feet: tuple[str, ...], high: str = "") -> list[PoseTerm]:
    up = high or f"P.part_height(ENV, {{s}}, {label})"
    judged = f"{up.format(s='t')} * (P.uprightness(ENV, t) > 0.5)"
    return [
        PoseTerm(
            f"P.tolerance({up.format(s='info')}, 0.25, P.INF, margin=0.15)"
            " * P.tolerance(P.uprightness(ENV, info), 0.8, P.INF, margin=0.5)",
            f"{which} foot off the ground, upright",
            f"the {which} foot at least 0.2 m up over the second half, upright",
            judged,
            0.2,
            "at_least",
            0.0,
            "m",
            f"height of the {which} foot",
        )
    ]


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
