"""Gaits: forward or backward at a speed, a band or a distance, sideways, in a circle, in
place; with the qualifiers a gait takes (straight, never backward, without turning, high knees).
Each refuses, in one clause, what the env's body cannot do."""

from __future__ import annotations

import activities.llm.offline.behaviours.library as lib
from activities.behaviours.layout import FREE, PLANAR, SWIMMER
from activities.llm.offline.behaviours.compose import QUALIFIER, TASK, Builder
from activities.llm.offline.behaviours.measures import Measure
from activities.llm.offline.behaviours.motions import turn_count, yaw_rate
from activities.llm.offline.behaviours.poses import apply_poses
from activities.llm.offline.reading.intents import verb_fits
from activities.llm.offline.words.refusals import NotExpressible


def _velocity_metric(d: float) -> str:
    return "mean_x_velocity" if d > 0 else "mean_backward_velocity"


def locomotion(b: Builder) -> None:
    """Forward or backward at a speed (most, plain, slow, steady, exact, a band), a distance,
    in a circle or in place."""
    if not b.f.locomotion:
        hint = " (Humanoid-v5 walks)" if b.env == "HumanoidStandup-v5" else ""
        raise NotExpressible(
            f"{b.env} has no free-moving body whose velocity could be rewarded{hint}"
        )
    why = verb_fits(b.r.verb, b.env)
    if why:
        raise NotExpressible(why)
    if b.has("circle"):
        return _circle(b)
    if b.has("in_place"):
        return _in_place(b)
    if b.r.lateral is not None:
        return _sideways(b, b.r.lateral)
    d, fast = b.r.direction, b.f.reachable_speed
    word = "forward" if d > 0 else "backward"
    metric = _velocity_metric(d)
    if b.r.speed == "band":
        _speed_band(b, d, word)
    elif b.r.speed in ("max", "plain"):
        target = fast if b.r.speed == "max" else 0.5 * fast
        # Saturates above the target: past it, the other terms decide how to move.
        reach = 1.5 * target if b.r.speed == "max" else target
        b.term(
            "velocity",
            f"P.velocity_reward(ENV, info, target={reach:g}, direction={d:g})",
            1.0,
            TASK,
            r"v_t",
            f"{word} velocity up to {reach:g} m/s",
        )
        b.crit(
            lib.crit(
                f"moves_{word}",
                f"mean {word} velocity at least {target:g} m/s",
                metric,
                target,
                weight=2.0,
                # "As fast as possible": the target is the least that passes; training goes on
                # while the speed still improves.
                maximise=b.r.speed == "max",
            ),
            "velocity",
        )
    else:
        tracked = {"slow": 0.4 * fast, "steady": 0.6 * fast}.get(b.r.speed, b.r.target_speed)
        assert tracked is not None
        target = tracked
        if target > 1.5 * fast:
            b.notes.append(
                f"{target:g} m/s is well above the ~{fast:g} m/s a PPO policy typically reaches "
                f"on {b.env} within a few hundred thousand steps"
            )
        stated = b.r.speed not in ("slow", "steady")
        _track(b, d, word, target, lib.stated_speed_tolerance(target) if stated else None)
    if b.r.distance is not None:
        _distance(b, d, word)
    if b.lay.root == FREE or (b.lay.root == SWIMMER and b.has("straight")):
        straight = b.has("straight")
        b.term(
            "straight",
            "P.lateral_reward(ENV, info)",
            0.4 if straight else 0.2,
            QUALIFIER,
            "l_t",
            "no sideways drift",
        )
        if straight:
            b.crit(
                lib.crit(
                    "goes_straight",
                    "mean sideways speed at most 0.2 m/s",
                    "mean_abs_lateral_velocity",
                    0.2,
                    "at_most",
                ),
                "straight",
            )
    elif b.has("straight") and b.lay.root == PLANAR:
        b.notes.append(f"{b.env} moves in a plane: it always goes straight")
    if b.has("no_backward"):
        _never_backward(b, d, word)
    if b.has("no_turn"):
        _no_turn(b)
    if b.has("high_knees"):
        _high_knees(b)
    apply_poses(b, 0.5)
    careful = b.has("no_fall") | b.has("upright")
    b.upright(0.3 if careful else 0.15, strict=careful)
    b.falls()


def _sideways(b: Builder, side: float) -> None:
    """Walking to the left, to the right, or sideways either way (world +y is the left of the
    body's start)."""
    if b.lay.root != FREE:
        raise NotExpressible(f"{b.env} cannot move sideways (Ant and Humanoid can)")
    fast = b.f.reachable_speed
    lo, hi = b.r.speed_range
    stated = b.r.target_speed if b.r.speed == "exact" else (lo or hi)
    share = {"max": 1.0, "slow": 0.4, "steady": 0.6}.get(b.r.speed, 0.5)
    target = round(stated if stated is not None else share * fast, 3)
    word = {1.0: "to the left", -1.0: "to the right"}.get(side, "sideways")
    lateral = "P.lateral_velocity(ENV, info)"
    moving = f"{side:g} * {lateral}" if side else f"abs({lateral})"
    b.term(
        "sideways",
        f"P.tolerance({moving}, {target:g}, P.INF, margin={target:g}, sigmoid='linear', "
        "value_at_margin=0.0)",
        1.0,
        TASK,
        "y_t",
        f"moving {word} up to {target:g} m/s",
    )
    judged = round(0.5 * target, 3)
    if side:
        b.crit(
            lib.crit(
                "moves_sideways",
                f"mean speed {word} at least {judged:g} m/s",
                "",
                judged,
                weight=2.0,
            ),
            "sideways",
            measure=Measure(
                f"{side:g} * P.lateral_velocity(ENV, t)", "mean", (), "m/s", f"mean velocity {word}"
            ),
        )
    else:
        b.crit(
            lib.crit(
                "moves_sideways",
                f"mean sideways speed at least {judged:g} m/s",
                "mean_abs_lateral_velocity",
                judged,
                weight=2.0,
            ),
            "sideways",
        )
    apply_poses(b, 0.5)
    careful = b.has("no_fall") | b.has("upright")
    b.upright(0.3 if careful else 0.15, strict=careful)
    b.falls()


def _track(b: Builder, d: float, word: str, target: float, judged: float | None) -> None:
    """Near a target speed: the judge allows `judged` m/s either side (None: a quarter of the
    target, for words like "steady"); the reward's narrow bell pays for being close and a wide
    one pulls from a standing start."""
    margin = max(0.5 * target, 0.25)
    tol = judged if judged is not None else max(0.25 * target, 0.1)
    narrow = max(min(0.3 * target, 2.0 * tol), 0.15)
    b.term(
        "speed",
        f"0.5 * P.speed_tracking_reward(ENV, info, target={target:g}, margin={margin:g}, "
        f"direction={d:g}) + 0.5 * P.speed_tracking_reward(ENV, info, target={target:g}, "
        f"margin={narrow:g}, direction={d:g})",
        1.0,
        TASK,
        r"s_t",
        f"{word} speed near {target:g} m/s",
    )
    b.crit(
        lib.crit(
            f"moves_{word}_at_speed",
            f"mean {word} velocity near {target:g} m/s",
            _velocity_metric(d),
            target,
            "near",
            tol,
            weight=2.0,
        ),
        "speed",
    )


def _speed_band(b: Builder, d: float, word: str) -> None:
    """ "no quicker than 1 m/s", "at least 2 m/s", "between 1 and 2 m/s"."""
    lo, hi = b.r.speed_range
    fast = b.f.reachable_speed
    metric = _velocity_metric(d)
    if lo is not None and hi is not None:
        _track(b, d, word, round((lo + hi) / 2, 4), round((hi - lo) / 2, 4))
        return
    if hi is None:
        assert lo is not None
        b.term(
            "velocity",
            f"P.velocity_reward(ENV, info, target={lo:g}, direction={d:g})",
            1.0,
            TASK,
            r"v_t",
            f"{word} velocity up to {lo:g} m/s",
        )
        b.crit(
            lib.crit(
                f"moves_{word}",
                f"mean {word} velocity at least {lo:g} m/s",
                metric,
                lo,
                weight=2.0,
            ),
            "velocity",
        )
        return
    floor = round(min(0.5 * fast, 0.6 * hi), 3)
    margin = max(0.5 * hi, 0.25)
    b.term(
        "speed",
        f"P.tolerance({d:g} * P.forward_velocity(ENV, info), {floor:g}, {hi:g}, margin={margin:g})",
        1.0,
        TASK,
        r"s_t",
        f"{word} speed between {floor:g} and {hi:g} m/s",
    )
    b.crit(
        lib.crit(
            f"moves_{word}",
            f"mean {word} velocity at least {0.8 * floor:g} m/s",
            metric,
            0.8 * floor,
            weight=2.0,
        ),
        "speed",
    )
    b.crit(
        lib.crit(
            f"{word}_speed_limit",
            f"mean {word} velocity at most {hi:g} m/s",
            metric,
            hi,
            "at_most",
            weight=1.0,
        ),
        "speed",
    )


def _distance(b: Builder, d: float, word: str) -> None:
    far = b.r.distance
    assert far is not None
    episode = b.f.max_episode_steps * b.f.dt
    if far > b.f.reachable_speed * episode:
        b.notes.append(
            f"{far:g} m in one {episode:g} s episode needs more than the ~{b.f.reachable_speed:g} "
            f"m/s a policy typically reaches on {b.env}"
        )
    b.crit(
        lib.crit(
            f"covers_{far:g}_m".replace(".", "_"),
            f"travels at least {far:g} m {word}",
            "forward_distance",
            far * d,
            "at_least" if d > 0 else "at_most",
            weight=2.0,
        ),
        "velocity" if any(t.name == "velocity" for t in b.terms) else "speed",
    )


def _never_backward(b: Builder, d: float, word: str) -> None:
    b.term(
        "never_back",
        f"P.tolerance({d:g} * P.forward_velocity(ENV, info), 0.0, P.INF, margin=0.3)",
        0.3,
        QUALIFIER,
        "n_t",
        "never moving the wrong way",
    )
    b.crit(
        lib.crit(
            "never_goes_back",
            f"moves against the {word} direction in at most 5% of steps",
            "",
            0.05,
            "at_most",
        ),
        "never_back",
        measure=Measure(
            f"1.0 * ({d:g} * P.forward_velocity(ENV, t) < -0.1)",
            "mean",
            (),
            "",
            "share of steps moving the wrong way",
        ),
    )


def _no_turn(b: Builder) -> None:
    if b.lay.root not in (FREE, SWIMMER):
        b.notes.append(f"{b.env} moves in a plane: it cannot turn")
        return
    b.term(
        "heading", "P.heading_reward(ENV, info, 0.0)", 0.3, QUALIFIER, r"\psi_t", "facing forward"
    )
    b.crit(
        lib.crit("keeps_heading", "net turn within 0.3 rad", "total_turn", 0.0, "near", 0.3),
        "heading",
    )


def _high_knees(b: Builder) -> None:
    if not b.lay.knees:
        raise NotExpressible(f"{b.env} has no knees to lift")
    lift = {"Walker2d-v5": 0.9, "Humanoid-v5": 0.75}.get(b.env)
    if lift is None:
        raise NotExpressible(f"high knees need a biped (Walker2d-v5, Humanoid-v5); not {b.env}")
    b.term(
        "knees",
        f"P.knee_height_reward(ENV, info, lower={lift:g}, margin=0.2)",
        0.5,
        QUALIFIER,
        "k_t",
        f"the higher knee at least {lift:g} m up",
    )
    b.crit(
        lib.crit(
            "high_knees",
            f"the higher knee averages at least {lift - 0.1:g} m",
            "mean_peak_knee_height",
            lift - 0.1,
        ),
        "knees",
    )


def _circle(b: Builder) -> None:
    if b.lay.root not in (FREE, SWIMMER):
        raise NotExpressible(f"{b.env} moves in a vertical plane and cannot turn to walk a circle")
    b.has("ccw")  # the default way round
    d = -1.0 if b.has("cw") else 1.0
    speed = round(0.5 * b.f.reachable_speed, 3)
    rate = lib.SPIN_RATE.get(b.env, 0.5) / 2
    b.term(
        "speed",
        f"P.tolerance(P.speed(ENV, info), {speed:g}, P.INF, margin={speed:g})",
        1.0,
        TASK,
        "s_t",
        f"ground speed of {speed:g} m/s",
    )
    b.crit(
        lib.crit(
            "keeps_moving",
            f"mean ground speed at least {0.5 * speed:g} m/s",
            "mean_horizontal_speed",
            0.5 * speed,
        ),
        "speed",
    )
    yaw_rate(b, "turn", "turns_" + ("ccw" if d > 0 else "cw"), d, rate, 0.5, 2.0)
    if b.r.count:
        turn_count(b, d, b.r.count, "turn")
    apply_poses(b, 0.5)
    b.upright(0.2, strict=b.has("no_fall"))
    b.falls()


def _in_place(b: Builder) -> None:
    """'hop in place', 'run in place': the gait's motion without travelling."""
    if b.r.verb not in ("hop", "run", "jog", "walk", "march"):
        raise NotExpressible(
            f"'{b.r.verb or 'move'} in place' is not a motion the behaviour library measures"
        )
    if not b.lay.feet:
        raise NotExpressible(f"{b.env} has no feet to lift")
    b.term(
        "hold",
        "P.position_reward(ENV, info, x=0.0, y=0.0, radius=0.25, margin=1.0)",
        1.0,
        TASK,
        "p_t",
        "staying near the start",
    )
    b.term(
        "airborne",
        "P.contact_reward(ENV, info, feet_down=0.0)"
        if b.r.verb == "hop"
        else "P.foot_height_reward(ENV, info, lower=0.1, margin=0.1)",
        0.5,
        TASK,
        "f_t",
        "feet off the floor" if b.r.verb == "hop" else "a foot lifted",
    )
    b.crit(
        lib.crit(
            "stays_in_place",
            "ends within 0.5 m of the start",
            "final_distance_from_start",
            0.5,
            "at_most",
            weight=2.0,
        ),
        "hold",
    )
    if b.r.verb == "hop":
        b.crit(
            lib.crit(
                "leaves_the_floor",
                "no foot on the floor in at least 20% of steps",
                "flight_fraction",
                0.2,
            ),
            "airborne",
        )
    else:
        b.crit(
            lib.crit(
                "lifts_feet", "a foot at least 0.1 m up at some point", "max_foot_height", 0.1
            ),
            "airborne",
        )
    if b.has("high_knees"):
        _high_knees(b)
    apply_poses(b, 0.5)
    b.upright(0.3, strict=True)
    b.falls()
