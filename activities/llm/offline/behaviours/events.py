"""Phases that end on the body's own events: counted jumps (rise above a height, come back
down, N times) and flips (crouch, launch, rotate by the torso's accumulated pitch, land), as the
reward contract's backflip. The judge counts the jumps and the turn from the body itself."""

from __future__ import annotations

import math
from dataclasses import replace

import activities.llm.offline.behaviours.library as lib
from activities.behaviours.layout import FREE, PLANAR
from activities.llm.offline.behaviours.compose import (
    QUALIFIER,
    QUALIFIER_WORDS,
    TASK,
    Builder,
    Term,
)
from activities.llm.offline.behaviours.cores import ANGLE_LIMITED, jump_target
from activities.llm.offline.behaviours.measures import Measure
from activities.llm.offline.behaviours.phase_plan import Gated, Plan
from activities.llm.offline.reading.steps import Step
from activities.llm.offline.words.refusals import NotExpressible

TURN = 2.0 * math.pi
RISE_SPEED = 2.0  # m/s upward: pays a counted jump's rise term's speed half in full
TRAVEL_PER_JUMP = 0.25  # m: "hop forward twice" is judged on at least this much per jump
QUARTER = round(math.pi / 2, 4)  # rad: the launch ends once the torso has turned this far
FLIP_RATE = 2.0 * math.pi  # rad/s: a turn a second pays the rotate term in full
# Torso heights (m) of a flip's crouch and launch, and the SHAPING band that lets it turn over.
FLIP_HEIGHTS = {
    "HalfCheetah-v5": (0.6, 0.9, None),
    "Ant-v5": (0.35, 0.8, (0.2, 3.0)),
    "Humanoid-v5": (1.15, 1.5, (0.3, 3.0)),
}


def _body_checks(b: Builder, what: str) -> None:
    if b.env in ANGLE_LIMITED:
        raise NotExpressible(
            f"{b.env} ends the episode when its torso tilts more than {ANGLE_LIMITED[b.env]:g} "
            f"rad, which SHAPING cannot move, so it cannot {what}"
        )


def counted_jumps(m: Builder, plan: Plan, i: int, step: Step, gated: Gated) -> list[int]:
    """N counted jumps: rise above a height, come back down, N times."""
    b = Builder(plan.env, step)
    if plan.env not in lib.JUMP_TARGET:
        raise NotExpressible(
            f"jumping needs a body with legs and a torso height (Hopper, Walker2d, Ant, "
            f"Humanoid); not {plan.env}"
        )
    n = step.count or 2
    stand_h = b.lay.stand_height
    target = jump_target(b)
    up = round(stand_h + 0.6 * (target - stand_h), 3)
    down = round(stand_h + 0.15 * (target - stand_h), 3)
    rises, lands = [], []
    for k in range(n):
        rises.append(plan.add(i, f"jump_{k + 1}", "height", above=up))
        lands.append(plan.add(i, f"land_{k + 1}", "height", below=down))
    if i == len(plan.steps) - 1:
        plan.phases[-1] = replace(plan.phases[-1], until=None, below=None)
    # Half for the height (rising linearly from standing), half for the upward speed that
    # gets it there: a bell around the target alone pays almost nothing at standing height.
    rise = gated.add(
        Term(
            "rise",
            f"0.5 * P.tolerance(P.height(ENV, info), {target:g}, P.INF, "
            f"margin={target - stand_h:.3g}, sigmoid='linear') + 0.5 * min(max("
            f"P.vertical_velocity(ENV, info) / {RISE_SPEED:g}, 0.0), 1.0)",
            1.0,
            TASK,
            "h_t",
            f"torso up to {target:g} m",
        ),
        tuple(rises),
    )
    land = gated.add(
        Term(
            "land",
            f"P.height_reward(ENV, info, lower=0.0, upper={down:g}, margin=0.3)",
            1.0,
            TASK,
            r"\ell_t",
            "coming back down",
        ),
        tuple(lands),
    )
    m.crit(
        lib.crit("jumps", f"{n} distinct jumps above {up:g} m", "", float(n), weight=3.0),
        rise,
        land,
        measure=Measure("P.height(ENV, t)", "count_rises", (up, down), "", "distinct jumps"),
    )
    if step.direction:
        _travel(m, gated, step.direction, n, tuple(rises + lands))
    _land_upright(m, lands[-1])
    m.shaping.update(b.shaping)
    m.notes += [n for n in b.notes if n not in m.notes]
    _event_qualifiers(m, step, "jumps")
    return rises + lands[:-1]


def _travel(m: Builder, gated: Gated, d: float, n: int, phases: tuple[int, ...]) -> None:
    """Counted jumps that go somewhere: pay for moving that way while jumping, and judge the
    distance covered over the episode."""
    word = "forward" if d > 0 else "backward"
    travel = gated.add(
        Term(
            "travel",
            f"P.tolerance({d:g} * P.forward_velocity(ENV, info), 0.5, P.INF, margin=0.5)",
            0.5,
            TASK,
            r"v_t",
            f"moving {word} while jumping",
        ),
        phases,
    )
    far = round(TRAVEL_PER_JUMP * n, 3)
    m.crit(
        lib.crit(
            f"travels_{word}",
            f"travels at least {far:g} m {word}",
            "forward_distance",
            far * d,
            "at_least" if d > 0 else "at_most",
            weight=1.0,
        ),
        travel,
    )


EVENT_QUALIFIERS = frozenset({"no_fall", "whole_episode", "upright", "in_place", "still"})


def _event_qualifiers(m: Builder, step: Step, what: str) -> None:
    """Counted jumps and flips take survival, posture and place qualifiers; the others, and
    poses held while jumping, are listed as not measured."""
    for q in sorted(step.qualifiers - EVENT_QUALIFIERS):
        said = f"'{QUALIFIER_WORDS.get(q, q)}' (does not apply to {what} on {m.env})"
        if said not in m.not_applied:
            m.not_applied.append(said)
    for pose in step.poses:
        m.not_applied.append(f"{pose.replace('_', ' ')} (not measured during {what})")
    if step.qualifiers & {"no_fall", "whole_episode"}:
        m.survival(0.95, "does not fall: survives at least 95% of the episode")
    if step.qualifiers & {"in_place", "still"}:
        # "jump three times without travelling": judged, or a body that hops 6 m forward
        # passes it.
        m.term(
            "hold",
            "P.position_reward(ENV, info, x=0.0, y=0.0, radius=0.25, margin=1.0)",
            0.5,
            QUALIFIER,
            "p_t",
            "staying near the start",
        )
        m.crit(
            lib.crit(
                "stays_in_place",
                f"{what} end within 0.5 m of the start",
                "final_distance_from_start",
                0.5,
                "at_most",
                weight=2.0,
            ),
            "hold",
        )


def _land_upright(m: Builder, phase: int) -> None:
    m.term("upright", "P.upright_reward(ENV, info)", 0.3, QUALIFIER, "u_t", "upright torso")
    m.crit(
        lib.crit("lands_upright", "upright after the last landing", "", 0.8),
        "upright",
        measure=Measure("P.uprightness(ENV, t)", "late_mean", (), "", "uprightness"),
    )
    m.windows["lands_upright"] = (phase,)


ROLL_RATE = math.pi  # rad/s: half a roll a second pays the roll term in full
# Bodies that can roll about their forward axis: the SHAPING band that lets the torso go low
# enough to lie on its side (None: the env never ends an episode on height).
ROLL_BANDS: dict[str, tuple[float, float] | None] = {
    "Ant-v5": (0.2, 3.0),
    "Humanoid-v5": (0.3, 3.0),
    "HumanoidStandup-v5": None,
}


def _widen(m: Builder, env: str, band: tuple[float, float] | None, what: str) -> None:
    """SHAPING healthy_z_range `band` where the env would end the episode before the turn."""
    if band is not None:
        m.shape(
            f"{env} ends an episode when its torso leaves {list(lib.facts(env).healthy_z or ())} "
            f"m: SHAPING healthy_z_range {list(band)} lets it {what}",
            healthy_z_range=list(band),
        )


def _turned(
    m: Builder,
    name: str,
    said: str,
    turn: float,
    d: float,
    axis: str,
    term: str = "",
    label: str = "sideways roll",
) -> None:
    """The criterion of a turn about `axis`: 90 % of it, the way `d`, by the episode's end."""
    m.crit(
        lib.crit(name, f"turns {turn:.3g} rad {said}", "", round(0.9 * turn, 4), weight=3.0),
        term or axis,
        measure=Measure(f"{d:g} * P.total_rotation(ENV, t, '{axis}')", "last", (), "rad", label),
    )


def roll(m: Builder, plan: Plan, i: int, step: Step, gated: Gated) -> list[int]:
    """Roll over sideways, counted: turn about the torso's forward axis (its accumulated roll,
    SHAPING `until: turn_roll`), then settle."""
    if plan.env not in ROLL_BANDS:
        raise NotExpressible(
            f"rolling over needs a free body that can turn onto its side (Ant, Humanoid, "
            f"HumanoidStandup); {plan.env} "
            + ("moves in a vertical plane" if lib.facts(plan.env).locomotion else "cannot")
        )
    _widen(m, plan.env, ROLL_BANDS[plan.env], "roll onto its side")
    n = step.count or 1
    d = step.direction
    turn = round(TURN * n, 4)
    way_on = f"P.tolerance({d:g} * info['turn_roll'], -0.5, P.INF, margin=1.0)"
    m.progress_factors.append(way_on)
    edge = {"above": round(0.9 * turn, 4)} if d > 0 else {"below": -round(0.9 * turn, 4)}
    p0 = plan.add(i, "roll", "turn_roll", **edge)
    p1 = plan.add(i, "settle")
    gated.add(
        Term(
            "roll",
            f"min(max({d:g} * P.rotation_rate(ENV, info, 'roll') / {ROLL_RATE:g}, 0.0), 1.0)"
            f" * {way_on}",
            1.0,
            TASK,
            r"\rho_t",
            "rolling over sideways",
        ),
        (p0,),
    )
    settle = "P.tolerance(P.rotation_rate(ENV, info, 'roll'), -0.5, 0.5, margin=1.0)"
    if plan.env == "Ant-v5":
        settle = f"P.upright_reward(ENV, info) * {settle}"  # back on its feet
    gated.add(Term("settle", settle, 1.0, TASK, "s_t", "settled after the roll"), (p1,))
    times = f" {n} times" if n > 1 else ""
    _turned(m, "rolls", f"about its forward axis (rolls over{times})", turn, d, "roll")
    if plan.env == "Ant-v5":
        m.crit(
            lib.crit("lands_upright", "back on its feet after the roll", "", 0.7, weight=2.0),
            "settle",
            measure=Measure("P.uprightness(ENV, t)", "final", (), "", "uprightness at the end"),
        )
    _event_qualifiers(m, step, "a roll")
    return [p0]


def flip(m: Builder, plan: Plan, i: int, step: Step, gated: Gated) -> list[int]:
    """Crouch, launch, rotate (the torso's accumulated pitch), land."""
    b = Builder(plan.env, step)
    _body_checks(b, "flip")
    heights = FLIP_HEIGHTS.get(plan.env)
    if heights is None or b.lay.root not in (PLANAR, FREE):
        raise NotExpressible(
            f"a flip needs a torso that can turn over in the air (HalfCheetah, Ant, Humanoid); "
            f"not {plan.env}"
        )
    crouch, launch, band = heights
    if step.height is not None:
        launch = round(b.lay.stand_height + step.height if step.height_rise else step.height, 3)
    _widen(m, plan.env, band, "turn over in training and evaluation")
    n = step.count or 1
    d = step.direction
    turn = round(TURN * n, 4)
    way = "backflip" if d > 0 else "front flip"
    # Crouching, rising, turning and the progress floor pay only while the torso has not turned
    # the other way: a cheetah rears as high on its front legs as on its hind ones, a front flip
    # reaches the later phases as fast as a backflip, and once over the wrong way it lies on
    # its back with no way back.
    way_on = f"P.tolerance({d:g} * info['turn'], -0.5, P.INF, margin=1.0)"
    m.progress_factors.append(way_on)
    p0 = plan.add(i, "crouch", "height", below=crouch)
    p1 = plan.add(i, "launch", "turn", **({"above": QUARTER} if d > 0 else {"below": -QUARTER}))
    edge = {"above": round(0.9 * turn, 4)} if d > 0 else {"below": -round(0.9 * turn, 4)}
    p2 = plan.add(i, "rotate", "turn", **edge)
    p3 = plan.add(i, "land")
    gated.add(
        Term(
            "crouch",
            f"P.height_reward(ENV, info, lower=0.0, upper={crouch:g}, margin=0.2) * {way_on}",
            1.0,
            TASK,
            "c_t",
            "crouching",
        ),
        (p0,),
    )
    gated.add(
        Term(
            "launch",
            f"P.height_reward(ENV, info, lower={launch:g}, margin=0.3) * {way_on}",
            1.0,
            TASK,
            "h_t",
            f"torso up to {launch:g} m",
        ),
        (p1,),
    )
    # The turning rate, not how far it has turned: a level has resting places short of the
    # full turn (on its back at pi, on its nose at 5 rad), and only momentum carries it over.
    gated.add(
        Term(
            "rotate",
            f"min(max({d:g} * P.rotation_rate(ENV, info, 'pitch') / {FLIP_RATE:g}, 0.0), 1.0)"
            f" * {way_on}",
            1.0,
            TASK,
            r"\theta_t",
            f"turning {'nose-up' if d > 0 else 'nose-down'}",
        ),
        (p2,),
    )
    gated.add(
        Term(
            "land_upright",
            # Upright and no longer turning: momentum carries a flip on to a second and third.
            f"P.upright_reward(ENV, info) * P.tolerance(P.rotation_rate(ENV, info, 'pitch'), "
            f"-1.0, 1.0, margin={FLIP_RATE / 2:g})",
            1.0,
            TASK,
            "u_t",
            "upright after the turn",
        ),
        (p3,),
    )
    times = f" {n} times" if n > 1 else ""
    side = "nose-up" if d > 0 else "nose-down"
    _turned(m, "flips", f"{side} ({way}{times})", turn, d, "pitch", "rotate", f"{side} turn")
    m.crit(
        lib.crit("lands_upright", "upright at the end, after the turn", "", 0.7, weight=2.0),
        "land_upright",
        measure=Measure(
            f"P.uprightness(ENV, t) * ({d:g} * P.total_rotation(ENV, t, 'pitch') >= "
            f"{0.9 * turn:.4g})",
            "final",
            (),
            "",
            "uprightness after the turn",
        ),
    )
    m.crit(
        # Random flailing reaches it too: it guides, the turn and the landing decide.
        lib.crit(
            "airborne", f"torso reaches at least {launch:g} m", "max_height", launch, weight=0.5
        ),
        "launch",
    )
    _event_qualifiers(m, step, "a flip")
    return [p0, p1, p2]
