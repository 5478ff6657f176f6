"""Postures: standing (up from the ground), lying, sitting, squatting, holding a pose and
coming to rest. Where only the env's termination forbids a posture (an Ant or a Humanoid lying
down, a Humanoid sitting), the step declares SHAPING that moves the termination band and says
so; the judge still measures the posture itself."""

from __future__ import annotations

import activities.llm.offline.behaviours.library as lib
from activities.behaviours.layout import FREE, PLANAR, SWIMMER
from activities.llm.offline.behaviours.compose import QUALIFIER, TASK, Builder, Direction
from activities.llm.offline.behaviours.measures import Measure
from activities.llm.offline.behaviours.poses import apply_poses
from activities.llm.offline.words.refusals import NotExpressible

# Torso heights (m) that count as lying, and the SHAPING band that lets a body lie there when
# its env would end the episode first.
LIE_HEIGHT = {"HumanoidStandup-v5": 0.25, "Ant-v5": 0.32, "Humanoid-v5": 0.35}

LIE_BAND = {"Ant-v5": (0.1, 1.0), "Humanoid-v5": (0.0, 2.0)}

SIT_BAND = {"Humanoid-v5": (0.3, 2.0)}

SIT_HEIGHT = {**lib.SIT_HEIGHT, "Humanoid-v5": 0.55}

# Envs whose health also checks the torso's angle: no height band lets them lie or flip.
ANGLE_LIMITED = {"Hopper-v5": 0.2, "Walker2d-v5": 1.0}


def can_stand(b: Builder) -> bool:
    """Whether the body has a posture to stand in."""
    return (
        b.lay.height_index is not None
        and b.env != "HalfCheetah-v5"
        and b.lay.root in (PLANAR, FREE)
    )


def stand(b: Builder) -> None:
    """Standing up (from the ground, on HumanoidStandup-v5) and staying up, still or posed."""
    if not can_stand(b):
        if "still" in b.r.qualifiers or b.r.core == "stop":
            return stop(b)
        raise NotExpressible(
            f"{b.env} has no posture to stand up in (Hopper, Walker2d, Ant, Humanoid, "
            "HumanoidStandup do)"
        )
    if b.has("from_ground") and b.env != "HumanoidStandup-v5":
        raise NotExpressible(
            f"{b.env} starts every episode standing; 'from the ground' needs "
            "HumanoidStandup-v5, which starts lying down"
        )
    tall = b.r.height if b.r.height is not None else 0.9 * b.lay.stand_height
    if b.r.poses:
        tall = min(tall, 0.75 * b.lay.stand_height)  # a pose bends the body: stay up, not tall
    b.term(
        "height",
        f"P.height_reward(ENV, info, lower={tall:.3g}, margin={0.5 * b.lay.stand_height:.3g})",
        1.0,
        TASK,
        "h_t",
        f"torso at least {tall:.2f} m up",
    )
    b.has("upright")  # standing is upright already
    b.has("stay")  # judged over the second half, below
    b.upright(0.5, strict=True)
    hold_criterion(b, "stands_tall", f"torso at least {tall:.2f} m high", tall, "at_least", 0.0)
    if b.has("still") | b.has("in_place"):
        still(b, 0.3)
    apply_poses(b, 0.5)
    b.falls()


def hold_criterion(
    b: Builder, name: str, text: str, target: float, direction: Direction, tol: float
) -> None:
    """A torso-height criterion over the second half, or from the deadline on."""
    deadline = b.r.deadline
    if deadline is None:
        b.crit(
            lib.crit(
                name,
                f"{text} over the second half",
                "late_mean_height",
                target,
                direction,
                tol,
                weight=2.0,
            ),
            "height",
        )
        return
    b.crit(
        lib.crit(name, f"{text} from {deadline:g} s on", "", target, direction, tol, weight=2.0),
        "height",
        measure=Measure("P.height(ENV, t)", "mean", (), "m", "torso height", after=deadline),
    )


def still(b: Builder, weight: float) -> None:
    """A no-travel term and its criterion (mean horizontal speed at most 0.2 m/s)."""
    call = "P.still_reward(ENV, info)"
    b.term("still", call, weight, QUALIFIER, "s_t", "not travelling")
    b.crit(
        lib.crit(
            "stays_in_place",
            "mean horizontal speed at most 0.2 m/s",
            "mean_horizontal_speed",
            0.2,
            "at_most",
        ),
        "still",
    )


def lie(b: Builder) -> None:
    """Lying down: a low torso, with SHAPING where the env would end the episode first."""
    low = LIE_HEIGHT.get(b.env)
    if low is None:
        if b.env in ANGLE_LIMITED:
            why = (
                f"{b.env} ends the episode when its torso tilts more than "
                f"{ANGLE_LIMITED[b.env]:g} rad, which SHAPING cannot move, so it cannot lie down"
            )
        else:
            why = f"{b.env} has no posture to lie down from (HumanoidStandup-v5 can lie down)"
        raise NotExpressible(why)
    low = b.r.height if b.r.height is not None else low
    band = LIE_BAND.get(b.env)
    if band is not None:
        floor = b.f.healthy_z[0] if b.f.healthy_z else 0.0
        b.shape(
            f"{b.env} ends an episode when its torso drops below {floor:g} m "
            f"(or leaves its healthy band): SHAPING healthy_z_range {list(band)} lets it lie "
            "down in training and evaluation; the judge measures the torso height itself",
            healthy_z_range=list(band),
        )
    b.term(
        "low",
        f"P.height_reward(ENV, info, lower=0.0, upper={low:g}, margin=0.3)",
        1.0,
        TASK,
        "h_t",
        f"torso below {low:g} m",
    )
    b.crit(
        lib.crit(
            "lies_down",
            f"torso below {low:g} m over the second half",
            "late_mean_height",
            low,
            "at_most",
            weight=2.0,
        ),
        "low",
    )
    if b.has("still") | b.has("whole_episode") | b.has("stay"):
        b.term("still", "P.still_reward(ENV, info)", 0.5, QUALIFIER, "s_t", "not travelling")
        b.term(
            "limbs", "P.joint_still_reward(ENV, info)", 0.5, QUALIFIER, r"\omega_t", "limbs still"
        )
        b.crit(
            lib.crit(
                "stays_still",
                "joints nearly still over the second half",
                "late_joint_speed",
                0.5,
                "at_most",
            ),
            "limbs",
            "still",
        )
    apply_poses(b, 0.5)


def hold(b: Builder) -> None:
    """Sitting or squatting: the torso held at a height, upright."""
    sit = b.r.core == "sit"
    table = SIT_HEIGHT if sit else lib.SQUAT_HEIGHT
    if b.env not in table:
        raise NotExpressible(
            f"a {b.r.core} needs a body with legs to bend; {', '.join(table)} have one"
        )
    target = b.r.height if b.r.height is not None else table[b.env]
    band = SIT_BAND.get(b.env) if sit else None
    if band is not None:
        b.shape(
            f"{b.env} ends an episode when its torso drops below 1.0 m: SHAPING healthy_z_range "
            f"{list(band)} lets it sit (torso at {target:g} m) in training and evaluation",
            healthy_z_range=list(band),
        )
    elif b.env == "Humanoid-v5":
        b.notes.append(
            "Humanoid-v5 ends an episode when the torso drops below 1.0 m, so the squat holds "
            f"the torso at {target:g} m (standing: 1.4 m)"
        )
    b.term(
        "height",
        f"P.height_reward(ENV, info, lower={target - 0.1:g}, upper={target + 0.1:g}, margin=0.2)",
        1.0,
        TASK,
        "h_t",
        f"torso at {target:g} m",
    )
    b.has("upright")
    b.has("stay")
    b.upright(0.5, strict=True)
    tol = 0.1 if sit else 0.08
    word = "sits" if sit else "squats"
    hold_criterion(b, f"{word}_at_height", f"torso at {target:g} m", target, "near", tol)
    if b.has("still"):
        still(b, 0.3)
    apply_poses(b, 0.5)
    b.falls()


def _stay_up(b: Builder, share: float) -> None:
    """On a body that stands (but HumanoidStandup, which starts lying): the torso held at
    `share` of its standing height, as a qualifier."""
    if can_stand(b) and b.env != "HumanoidStandup-v5":
        low = share * b.lay.stand_height
        b.term(
            "height",
            f"P.height_reward(ENV, info, lower={low:.3g}, margin=0.3)",
            0.5,
            QUALIFIER,
            "h_t",
            f"torso at least {low:.2f} m up",
        )


def pose(b: Builder) -> None:
    """Holding a pose of named body parts (on a standing body: standing up while doing it)."""
    if not b.r.poses:
        return stop(b)
    _stay_up(b, 0.75)
    apply_poses(b, 1.0)
    b.has("stay")
    if b.has("still") and b.lay.root in (PLANAR, FREE, SWIMMER):
        still(b, 0.3)
    # Random flailing keeps a HalfCheetah upright: here that guards, the pose decides.
    b.upright(0.3, strict=b.has("upright") | b.has("no_fall"), judged=0.5)
    b.falls()


def stop(b: Builder) -> None:
    """Coming to rest: no travel, limbs quiet, and still up where the body can fall."""
    b.has("still")
    b.has("stay")
    b.has("in_place")
    if b.lay.root in (PLANAR, FREE, SWIMMER):
        b.term("still", "P.still_reward(ENV, info, margin=0.3)", 1.0, TASK, "s_t", "not travelling")
        b.crit(
            lib.crit(
                "comes_to_rest",
                "horizontal speed at most 0.2 m/s over the second half",
                "late_horizontal_speed",
                0.2,
                "at_most",
                weight=2.0,
            ),
            "still",
        )
    else:
        b.term("limbs", "P.joint_still_reward(ENV, info)", 1.0, TASK, r"\omega_t", "limbs still")
        b.crit(
            lib.crit(
                "comes_to_rest",
                "joints nearly still over the second half",
                "late_joint_speed",
                0.5,
                "at_most",
                weight=2.0,
            ),
            "limbs",
        )
    _stay_up(b, 0.8)
    apply_poses(b, 0.5)
    b.upright(0.3, strict=b.has("upright") | b.has("no_fall"))
    b.falls()
