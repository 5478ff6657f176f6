"""Composing a reward and its criteria from the behaviour library, for a read intent.

Each core behaviour contributes its task terms, each qualifier its own terms and criteria: "without
falling" adds an upright term and a survival criterion, "in place" a position-hold term and a
distance criterion, "for the whole episode" a stricter survival bar. Every term is a bounded
primitive reward form in [0, 1] times a weight (costs aside), so a weight reads as "how much this
part counts"; a constant survival term is kept below the behaviour's own weights, so standing
still never pays more than doing the behaviour. Each criterion names the terms that serve it: the
reviser raises those when it fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import activities.llm.offline.library as lib
from activities.behaviours.layout import FREE, PLANAR, SWIMMER, layout
from activities.envs.catalog import facts
from activities.llm.offline.intents import NotExpressible, verb_fits
from activities.llm.offline.reading import Reading
from workflows.contracts.judging import Criterion

# How a refusal names a qualifier it could not apply.
QUALIFIER_WORDS = {
    "no_fall": "without falling",
    "whole_episode": "for the whole episode",
    "from_ground": "from the ground",
    "in_place": "in place",
    "still": "still",
    "stay_up": "stay standing",
    "ccw": "counter-clockwise",
    "cw": "clockwise",
    "circle": "in a circle",
    "high_knees": "high knees",
    "upright": "upright",
}
# A survival bonus may pay at most this share of the task terms' summed weight per step.
ALIVE_SHARE = 0.25
TASK, QUALIFIER, PENALTY, BONUS = "task", "qualifier", "penalty", "bonus"


@dataclass(frozen=True)
class Term:
    """One reward term: `weight * <call>` (a cost is subtracted)."""

    name: str
    call: str  # a primitives expression over ENV, info and action
    weight: float
    role: str  # TASK, QUALIFIER, PENALTY or BONUS
    latex: str  # the term's symbol in the formula
    meaning: str  # what it rewards, for the summary


@dataclass(frozen=True)
class Composition:
    """A composed reward: its terms, its criteria and which terms serve each criterion."""

    core: str
    terms: tuple[Term, ...]
    criteria: tuple[Criterion, ...]
    serves: dict[str, tuple[str, ...]]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def weights(self) -> dict[str, float]:
        """The revisable parameters: one weight per term, keyed `<term>_weight`."""
        return {f"{t.name}_weight": t.weight for t in self.terms}

    def with_weights(self, params: dict[str, float]) -> Composition:
        """The same composition with the weights a revision chose."""
        terms = tuple(
            Term(
                t.name, t.call, params.get(f"{t.name}_weight", t.weight), t.role, t.latex, t.meaning
            )
            for t in self.terms
        )
        return Composition(self.core, terms, self.criteria, self.serves, self.notes)


class _Builder:
    """Collects terms, criteria and notes while one composition is built."""

    def __init__(self, env_id: str, reading: Reading) -> None:
        self.env = env_id
        self.r = reading
        self.f = facts(env_id)
        self.lay = layout(env_id)
        self.terms: list[Term] = []
        self.criteria: list[Criterion] = []
        self.serves: dict[str, tuple[str, ...]] = {}
        self.notes: list[str] = []
        self.used: set[str] = set()

    def term(self, name: str, call: str, weight: float, role: str, latex: str, meaning: str):
        self.terms.append(Term(name, call, round(weight, 4), role, latex, meaning))

    def crit(self, criterion: Criterion, *terms: str) -> None:
        if any(c.name == criterion.name for c in self.criteria):
            return
        self.criteria.append(criterion)
        self.serves[criterion.name] = terms

    def has(self, name: str) -> bool:
        """Whether the prompt holds the qualifier (which counts it as used)."""
        self.used.add(name)
        return name in self.r.qualifiers

    def refuse(self, why: str) -> NotExpressible:
        return NotExpressible(why)

    # --- shared pieces ------------------------------------------------------------------------

    def upright(self, weight: float, strict: bool) -> None:
        """An upright term for bodies that can fall or flip; a criterion when `strict`."""
        if self.lay.root not in (PLANAR, FREE):
            return
        self.term(
            "upright", "P.upright_reward(ENV, info)", weight, QUALIFIER, "u_t", "upright torso"
        )
        if strict or self.env in lib.FLIPPABLE:
            self.crit(
                lib.crit("stays_upright", "torso upright on average", "mean_uprightness", 0.8),
                "upright",
            )

    def survival(self, bar: float, description: str) -> None:
        """A survival criterion (envs that end an episode on a fall) and a small alive bonus."""
        if not self.f.terminates:
            return
        self.crit(
            lib.crit("stays_healthy", description, "alive_fraction", bar, weight=2.0), "alive"
        )

    def finish(self) -> Composition:
        left = sorted(self.r.qualifiers - self.used)
        if left:
            shown = ", ".join(f"'{QUALIFIER_WORDS[q]}'" for q in left)
            raise NotExpressible(f"{shown} does not apply to {self.r.core} on {self.env}")
        if self.f.terminates:
            task = sum(t.weight for t in self.terms if t.role in (TASK, QUALIFIER))
            self.term("alive", "1.0", ALIVE_SHARE * task, BONUS, "1", "per step the episode lasts")
            if not any(c.metric == "alive_fraction" for c in self.criteria):
                self.survival(0.9, "does not fall: survives at least 90% of the episode")
        if self.f.ctrl_cost_weight > 0:
            w = self.f.ctrl_cost_weight * (2.0 if self.r.natural else 1.0)
            self.term("ctrl", "P.control_cost(action)", w, PENALTY, r"\lVert a_t \rVert^2", "")
        if self.r.natural:
            self.notes.append(
                "'natural' is read as smooth, energy-efficient motion (a doubled control cost)"
            )
        if self.r.unused:
            self.notes.append(f"words not used: {', '.join(self.r.unused)}")
        return Composition(
            self.r.core, tuple(self.terms), tuple(self.criteria[:4]), self.serves, tuple(self.notes)
        )


# --- cores ---------------------------------------------------------------------------------


def _locomotion(b: _Builder) -> None:
    if not b.f.locomotion:
        hint = " (Humanoid-v5 walks)" if b.env == "HumanoidStandup-v5" else ""
        raise b.refuse(f"{b.env} has no free-moving body whose velocity could be rewarded{hint}")
    why = verb_fits(b.r.verb, b.env)
    if why:
        raise b.refuse(why)
    if b.has("circle"):
        return _circle(b)
    if b.has("in_place"):
        return _in_place(b)
    d, fast = b.r.direction, b.f.reachable_speed
    word = "forward" if d > 0 else "backward"
    target = {
        "max": fast,
        "plain": 0.5 * fast,
        "slow": 0.4 * fast,
        "steady": 0.6 * fast,
        "exact": b.r.target_speed,
    }[b.r.speed]
    assert target is not None
    metric = "mean_x_velocity" if d > 0 else "mean_backward_velocity"
    if b.r.speed in ("max", "plain"):
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
            ),
            "velocity",
        )
    else:
        margin = max(0.5 * target, 0.25)
        b.term(
            "speed",
            f"P.speed_tracking_reward(ENV, info, target={target:g}, margin={margin:g}, "
            f"direction={d:g})",
            1.0,
            TASK,
            r"s_t",
            f"{word} speed near {target:g} m/s",
        )
        b.crit(
            lib.crit(
                f"moves_{word}_at_speed",
                f"mean {word} velocity near {target:g} m/s",
                metric,
                target,
                "near",
                margin,
                weight=2.0,
            ),
            "speed",
        )
    if b.lay.root == FREE:
        b.term(
            "straight", "P.lateral_reward(ENV, info)", 0.2, QUALIFIER, "l_t", "no sideways drift"
        )
    if b.has("high_knees"):
        _high_knees(b)
    careful = b.has("no_fall") | b.has("upright")
    b.upright(0.3 if careful else 0.15, strict=careful)
    _falls(b)


def _high_knees(b: _Builder) -> None:
    if not b.lay.knees:
        raise b.refuse(f"{b.env} has no knees to lift")
    lift = {"Walker2d-v5": 0.9, "Humanoid-v5": 0.75}.get(b.env)
    if lift is None:
        raise b.refuse(f"high knees need a biped (Walker2d-v5, Humanoid-v5); not {b.env}")
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


def _circle(b: _Builder) -> None:
    if b.lay.root not in (FREE, SWIMMER):
        raise b.refuse(f"{b.env} moves in a vertical plane and cannot turn to walk a circle")
    b.has("ccw")  # the default way round
    d = -1.0 if b.has("cw") else 1.0
    speed = round(0.5 * b.f.reachable_speed, 3)
    rate = lib.SPIN_RATE.get(b.env, 0.5) / 2
    way = "clockwise" if d < 0 else "counter-clockwise"
    b.term(
        "speed",
        f"P.tolerance(P.speed(ENV, info), {speed:g}, P.INF, margin={speed:g})",
        1.0,
        TASK,
        "s_t",
        f"ground speed of {speed:g} m/s",
    )
    b.term(
        "turn",
        f"P.yaw_rate_reward(ENV, info, target={rate:g}, direction={d:g})",
        1.0,
        TASK,
        r"\dot\psi_t",
        f"turning {way} at {rate:g} rad/s",
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
    metric = "mean_yaw_rate" if d > 0 else "mean_clockwise_yaw_rate"
    b.crit(
        lib.crit(
            "turns_" + ("ccw" if d > 0 else "cw"),
            f"mean {way} yaw rate at least {0.5 * rate:g} rad/s",
            metric,
            0.5 * rate,
            weight=2.0,
        ),
        "turn",
    )
    b.upright(0.2, strict=b.has("no_fall"))
    _falls(b)


def _in_place(b: _Builder) -> None:
    """'hop in place', 'run in place': the gait's motion without travelling."""
    if b.r.verb not in ("hop", "run", "jog", "walk", "march"):
        raise b.refuse(f"'{b.r.verb} in place' is not a motion the behaviour library measures")
    if not b.lay.feet:
        raise b.refuse(f"{b.env} has no feet to lift")
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
    b.upright(0.3, strict=True)
    _falls(b)


def _falls(b: _Builder) -> None:
    if b.has("whole_episode"):
        b.survival(0.99, "stays up for the whole episode")
    elif b.has("no_fall"):
        b.survival(0.95, "does not fall: survives at least 95% of the episode")
        if not b.f.terminates and b.lay.root in (PLANAR, FREE):
            b.notes.append(
                f"{b.env} never ends an episode on a fall: 'without falling' is read as "
                "staying upright"
            )


def _stand(b: _Builder) -> None:
    if b.lay.height_index is None or b.env == "HalfCheetah-v5" or b.lay.root not in (PLANAR, FREE):
        raise b.refuse(
            f"{b.env} has no posture to stand up in (Hopper, Walker2d, Ant, Humanoid, "
            "HumanoidStandup do)"
        )
    if b.has("from_ground") and b.env != "HumanoidStandup-v5":
        raise b.refuse(
            f"{b.env} starts every episode standing; 'from the ground' needs "
            "HumanoidStandup-v5, which starts lying down"
        )
    tall = 0.9 * b.lay.stand_height
    b.term(
        "height",
        f"P.height_reward(ENV, info, lower={tall:.3g}, margin={0.5 * b.lay.stand_height:.3g})",
        1.0,
        TASK,
        "h_t",
        f"torso at least {tall:.2f} m up",
    )
    b.has("upright")  # standing is upright already
    b.has("stay_up")  # judged over the second half, below
    b.upright(0.5, strict=True)
    b.crit(
        lib.crit(
            "stands_tall",
            f"torso at least {tall:.2f} m high over the second half",
            "late_mean_height",
            tall,
            weight=2.0,
        ),
        "height",
    )
    if b.has("still") | b.has("in_place"):
        b.term("still", "P.still_reward(ENV, info)", 0.3, QUALIFIER, "s_t", "not travelling")
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
    _falls(b)


# Torso heights (m) that count as lying: only bodies whose episode survives lying down.
LIE_HEIGHT = {"HumanoidStandup-v5": 0.25}


def _lie(b: _Builder) -> None:
    low = LIE_HEIGHT.get(b.env)
    if low is None:
        why = (
            f"{b.env} ends the episode when its torso drops, so it cannot lie down"
            if b.f.terminates
            else f"{b.env} has no posture to lie down from (HumanoidStandup-v5 can lie down)"
        )
        raise b.refuse(why)
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
    if b.has("still") | b.has("whole_episode"):
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


def _balance(b: _Builder) -> None:
    if b.env not in ("InvertedPendulum-v5", "InvertedDoublePendulum-v5"):
        raise b.refuse(
            "balancing means keeping a pole upright (InvertedPendulum-v5, "
            f"InvertedDoublePendulum-v5); {b.env} has no pole"
        )
    poles = 2 if b.env == "InvertedDoublePendulum-v5" else 1
    if poles == 1 and {"both", "two", "poles"} & set(b.r.tokens):
        raise b.refuse("InvertedPendulum-v5 has one pole (InvertedDoublePendulum-v5 has two)")
    b.term("pole", "P.pole_reward(ENV, info)", 1.0, TASK, r"\theta_t", "poles vertical")
    b.term("center", "P.center_reward(ENV, info)", 0.2, QUALIFIER, "c_t", "cart near the middle")
    b.has("upright")  # the poles' job already
    whole = b.has("whole_episode")
    bar = 0.99 if whole else 0.95
    b.crit(
        lib.crit(
            "keeps_balance",
            f"pole stays up for at least {bar:.0%} of the episode",
            "alive_fraction",
            bar,
            weight=2.0,
        ),
        "pole",
        "alive",
    )
    limit = 0.1 if poles == 2 else 0.05
    b.crit(
        lib.crit(
            "pole_vertical",
            f"mean pole deviation from vertical at most {limit:g} rad",
            "mean_abs_pole_angle",
            limit,
            "at_most",
        ),
        "pole",
    )


_CORES = {"locomotion": _locomotion, "stand": _stand, "lie": _lie, "balance": _balance}
COMPOSED_CORES = frozenset(_CORES)


def compose(reading: Reading, env_id: str) -> Composition:
    """The composition for a read intent on an env; NotExpressible naming what is missing."""
    build = _CORES.get(reading.core)
    if build is None:
        raise NotExpressible(
            f"the offline author does not compose {reading.core} with qualifiers yet"
        )
    b = _Builder(env_id, reading)
    build(b)
    return b.finish()
