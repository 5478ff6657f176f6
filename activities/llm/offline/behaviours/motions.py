"""Motions in place: spinning and turning about the vertical, jumping, balancing poles,
reaching a target and rearing up (counted jumps and flips are phased: phased.py)."""

from __future__ import annotations

import math

import activities.llm.offline.behaviours.library as lib
from activities.behaviours.layout import FREE, SWIMMER
from activities.llm.offline.behaviours.compose import QUALIFIER, TASK, Builder, duration_s
from activities.llm.offline.behaviours.measures import Measure
from activities.llm.offline.behaviours.poses import apply_poses
from activities.llm.offline.behaviours.postures import still
from activities.llm.offline.reading.intents import utmost_height
from activities.llm.offline.words.refusals import NotExpressible


def turn_count(b: Builder, d: float, count: int, serving: str) -> None:
    """A criterion on the net turn of `count` full turns (built-in metric total_turn)."""
    turn = 2 * math.pi * count
    way = "counter-clockwise" if d > 0 else "clockwise"
    b.crit(
        lib.crit(
            "full_turns",
            f"turns {count} full time{'s' if count > 1 else ''} {way} ({turn:.3g} rad)",
            "total_turn",
            round(0.9 * turn * d, 4),
            "at_least" if d > 0 else "at_most",
            weight=2.0,
        ),
        serving,
    )


def turning_way(b: Builder, what: str) -> float:
    """+1 counter-clockwise (the default) or -1 clockwise, for a body that turns about the
    vertical; refuses the others."""
    if b.lay.root not in (FREE, SWIMMER) or b.env == "HumanoidStandup-v5":
        raise NotExpressible(
            f"{what} needs a body that turns about the vertical (Ant, Humanoid, Swimmer); "
            f"not {b.env}"
        )
    b.has("ccw")
    return -1.0 if b.has("cw") else b.r.direction


def yaw_rate(
    b: Builder, term: str, crit: str, d: float, rate: float, share: float, weight: float
) -> None:
    """A term for turning at `rate` rad/s the way `d`, judged on at least `share` of it."""
    way = "counter-clockwise" if d > 0 else "clockwise"
    b.term(
        term,
        f"P.yaw_rate_reward(ENV, info, target={rate:g}, direction={d:g})",
        1.0,
        TASK,
        r"\dot\psi_t",
        f"turning {way} at {rate:g} rad/s",
    )
    b.crit(
        lib.crit(
            crit,
            f"mean {way} yaw rate at least {share * rate:g} rad/s",
            "mean_yaw_rate" if d > 0 else "mean_clockwise_yaw_rate",
            share * rate,
            weight=weight,
        ),
        term,
    )


def spin(b: Builder) -> None:
    """Spinning about the vertical at a rate, a number of turns, in place or not."""
    d = turning_way(b, "spinning")
    rate = b.r.rate if b.r.rate is not None else lib.SPIN_RATE[b.env]
    if b.r.rate is None:
        rate *= {"max": 1.5, "slow": 0.5}.get(b.r.speed, 1.0)
    yaw_rate(b, "spin", "spins", d, rate, 0.7, 3.0)
    if b.r.count:
        turn_count(b, d, b.r.count, "spin")
    if b.r.angle is not None:
        b.crit(
            lib.crit(
                "turns_through",
                f"net turn of {b.r.angle:.3g} rad",
                "total_turn",
                round(0.9 * b.r.angle * d, 4),
                "at_least" if d > 0 else "at_most",
            ),
            "spin",
        )
    if b.has("in_place") | b.has("still"):
        # Paid apart, a fast spin outbid staying put: an Ant spun at 3.3 rad/s with its torso
        # circling 0.3 m off its pivot at 0.93 m/s, where the no-travel bell pays nothing (raised
        # to weight 0.75, it still swayed 0.82-0.96 m/s). Paid only as far as the torso stayed
        # put, the spin was never found (standing still, 0.01 rad/s at half the budget). So half
        # of it is paid for spinning, the other half as far as the torso stays put (linearly,
        # to nothing at 1 m/s); spinning past the rate pays no more.
        spin_term = next(t for t in b.terms if t.name == "spin")
        b.term(
            "spin",
            f"{spin_term.call} * (0.5 + 0.5 * P.tolerance(P.speed(ENV, info), 0.0, 0.0, "
            "margin=1.0, sigmoid='linear', value_at_margin=0.0))",
            spin_term.weight,
            TASK,
            spin_term.latex,
            f"{spin_term.meaning}, in place",
        )
        still(b, 0.5)
    apply_poses(b, 0.5)
    b.upright(0.2, strict=b.has("no_fall"))
    b.falls()


def turn(b: Builder) -> None:
    """Turning to face a new heading ("turn left", "turn 90 degrees to the right")."""
    d = turning_way(b, "turning")
    angle = b.r.angle if b.r.angle is not None else math.pi / 2
    target = round(d * angle, 4)
    b.term(
        "face",
        f"P.heading_reward(ENV, info, {target:g}, margin=0.5)",
        1.0,
        TASK,
        r"\psi_t",
        f"facing {target:g} rad from the start",
    )
    b.crit(
        lib.crit(
            "turns_to_heading",
            f"net turn of {target:g} rad",
            "total_turn",
            target,
            "near",
            max(0.15 * angle, 0.2),
            weight=2.0,
        ),
        "face",
    )
    still(b, 0.3)
    b.has("still")
    b.has("in_place")
    apply_poses(b, 0.5)
    b.upright(0.3, strict=b.has("no_fall"))
    b.falls()


def jump(b: Builder) -> None:
    """One high jump, or jumping again and again (counted jumps are phased: phased.py)."""
    if b.env not in lib.JUMP_TARGET:
        raise NotExpressible(
            f"jumping needs a body with legs and a torso height (Hopper, Walker2d, Ant, "
            f"Humanoid); not {b.env}"
        )
    stand_h = b.lay.stand_height
    target = jump_target(b)
    b.term(
        "height",
        f"P.height_reward(ENV, info, lower={target:g}, margin={max(target - stand_h, 0.2):.3g})",
        1.0,
        TASK,
        "h_t",
        f"torso up to {target:g} m",
    )
    b.crit(
        lib.crit(
            "jumps_high",
            f"torso reaches at least {target:g} m (standing: {stand_h:g} m)",
            "max_height",
            target,
            weight=2.0,
            maximise=utmost_height(b.r.tokens),
        ),
        "height",
    )
    if b.r.repeat and b.lay.feet:
        b.term(
            "airborne",
            "P.contact_reward(ENV, info, feet_down=0.0)",
            0.5,
            TASK,
            "f_t",
            "feet off the floor",
        )
        up = round(stand_h + 0.5 * (target - stand_h), 3)
        b.crit(
            lib.crit(
                "jumps_again", f"at least 3 distinct jumps above {up:g} m", "", 3.0, weight=2.0
            ),
            "height",
            "airborne",
            measure=Measure(
                "P.height(ENV, t)", "count_rises", (up, stand_h + 0.02), "", "distinct jumps"
            ),
        )
    if b.has("in_place") | b.has("still"):
        still(b, 0.3)
    apply_poses(b, 0.5)
    b.upright(0.3, strict=b.has("no_fall") | b.has("upright"))
    b.falls()


def jump_target(b: Builder) -> float:
    """The torso height a jump aims for, with SHAPING where the env's band would end it."""
    stand_h = b.lay.stand_height
    target = lib.JUMP_TARGET[b.env]
    if b.r.height is not None:
        target = round(stand_h + b.r.height if b.r.height_rise else b.r.height, 3)
    band = b.f.healthy_z
    if band is not None and target >= band[1] - 0.05:
        b.shape(
            f"{b.env} ends an episode when its torso rises above {band[1]:g} m: SHAPING "
            f"healthy_z_range [{band[0]:g}, {target + 1:g}] lets it jump to {target:g} m",
            healthy_z_range=[band[0], round(target + 1.0, 3)],
        )
    return target


def balance(b: Builder) -> None:
    """Keeping the pole(s) upright."""
    if b.env not in ("InvertedPendulum-v5", "InvertedDoublePendulum-v5"):
        raise NotExpressible(
            "balancing means keeping a pole upright (InvertedPendulum-v5, "
            f"InvertedDoublePendulum-v5); {b.env} has no pole"
        )
    poles = 2 if b.env == "InvertedDoublePendulum-v5" else 1
    if poles == 1 and {"both", "two", "poles", "double"} & set(b.r.tokens):
        raise NotExpressible("InvertedPendulum-v5 has one pole (InvertedDoublePendulum-v5 has two)")
    b.term("pole", "P.pole_reward(ENV, info)", 1.0, TASK, r"\theta_t", "poles vertical")
    centered = b.has("centered")
    b.term(
        "center",
        "P.center_reward(ENV, info)",
        0.5 if centered else 0.2,
        QUALIFIER,
        "c_t",
        "cart near the middle",
    )
    if centered:
        b.crit(
            lib.crit(
                "cart_centered", "cart within 0.2 m of the middle on average", "", 0.2, "at_most"
            ),
            "center",
            measure=Measure(
                "np.abs(P.cart_position(ENV, t))",
                "mean",
                (),
                "m",
                "mean distance of the cart from the middle",
            ),
        )
    b.has("upright")  # the poles' job already
    b.has("no_fall")
    b.has("still")
    b.has("stay")
    held = duration_s(b.r, b.env)
    episode = b.f.max_episode_steps * b.f.dt
    bar = 0.99 if b.has("whole_episode") else 0.95
    if held is not None:
        bar = min(0.99, held / episode)
    keeps, vertical = lib.balance_criteria(poles == 2, bar)
    b.crit(keeps, "pole", "alive")
    b.crit(vertical, "pole")


def reach(b: Builder) -> None:
    """The fingertip to the target: quickly, by a deadline, holding still there."""
    if b.env != "Reacher-v5":
        raise NotExpressible(f"reaching needs an arm and a target (Reacher-v5); not {b.env}")
    b.term(
        "reach",
        "P.reach_reward(ENV, info, radius=0.02, margin=0.1)",
        1.0,
        TASK,
        "d_t",
        "fingertip at the target",
    )
    b.crit(lib.reaches_target(), "reach")
    quick = b.r.quick or "quickly" in b.r.tokens or "fast" in b.r.tokens
    if b.r.deadline is not None:
        b.crit(
            lib.crit(
                "reaches_in_time",
                f"fingertip within 0.03 m from {b.r.deadline:g} s on",
                "",
                0.03,
                "at_most",
            ),
            "reach",
            measure=Measure(
                "P.fingertip_distance(ENV, t)",
                "mean",
                (),
                "m",
                "fingertip-target distance",
                after=b.r.deadline,
            ),
        )
    elif quick:
        b.crit(
            lib.crit(
                "reaches_quickly",
                "mean fingertip distance over the episode at most 0.05 m",
                "mean_distance_to_target",
                0.05,
                "at_most",
            ),
            "reach",
        )
    if b.has("still") | b.has("stay"):
        b.term(
            "still",
            "P.joint_still_reward(ENV, info, margin=2.0)",
            0.2,
            QUALIFIER,
            r"\omega_t",
            "arm still",
        )
        b.crit(
            lib.crit(
                "holds_still",
                "arm joint speed at most 0.5 rad/s at the end",
                "final_joint_speed",
                0.5,
                "at_most",
            ),
            "still",
        )


def rear_up(b: Builder) -> None:
    """A quadruped on its rear legs: the torso pitched nose-up."""
    if b.env != "Ant-v5":
        raise NotExpressible(f"standing on rear legs needs a quadruped (Ant-v5); not {b.env}")
    target = b.r.angle if b.r.angle is not None else 1.2
    b.term(
        "pitch",
        f"P.pitch_reward(ENV, info, target={target:g}, margin=0.5)",
        1.0,
        TASK,
        r"\theta_t",
        f"nose up {target:g} rad",
    )
    judged = round(min(0.8, 0.7 * target), 3)
    b.crit(
        lib.crit(
            "rears_up",
            f"torso pitched nose-up at least {judged:g} rad over the second half",
            "late_torso_pitch_up",
            judged,
            weight=2.0,
        ),
        "pitch",
    )
    b.has("stay")
    b.has("upright")
    b.notes.append(lib.REAR_UP_NOTE)
    if b.has("still"):
        still(b, 0.3)
    apply_poses(b, 0.5)
    b.falls()
