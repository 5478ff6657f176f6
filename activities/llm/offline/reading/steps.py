"""From what a clause said to the step(s) it asks for: which behaviour, and its numbers.

The rules that settle words several behaviours share live here: "hop" is a jump when it is
high, counted or repeated and a gait otherwise; a flip takes in the jump before it; "stand up
and walk" is two steps because standing up is a posture one gets into first; a number goes to
the behaviour it can qualify (a speed to a gait, a height to a jump or a pose, a duration to
anything), and one that fits none refuses the intent, saying so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from activities.llm.offline.words.lexicon import (
    BACKWARD_VERBS,
    CORE_EXTRAS,
    FLIP_WAY,
    VERB_SPEED,
    words,
)
from activities.llm.offline.words.quantities import Quantity
from activities.llm.offline.words.refusals import NotExpressible


@dataclass(frozen=True)
class Step:
    """One behaviour of a prompt and what qualifies it."""

    core: str  # locomotion stand lie sit squat spin turn jump balance reach rear_up flip pose stop
    qualifiers: frozenset[str] = frozenset()
    tokens: tuple[str, ...] = ()  # the clause's words (for details like "both poles")
    # locomotion +1 forward / -1 backward; spin, turn +1 ccw; flip +1 back; jump: the way it
    # travels (0: on the spot)
    direction: float = 1.0
    speed: str = "plain"  # max, plain, slow, steady, exact, band
    target_speed: float | None = None  # m/s, for exact
    speed_range: tuple[float | None, float | None] = (None, None)  # m/s, for band
    height: float | None = None  # m: a stated height
    height_rise: bool = False  # the height is above standing ("jump 0.5 m high")
    distance: float | None = None  # m to travel
    duration: float | None = None  # s ("for 3 seconds")
    duration_steps: int | None = None  # env steps ("for 200 steps")
    deadline: float | None = None  # s ("within 2 seconds")
    angle: float | None = None  # rad (a turn or a lean)
    rate: float | None = None  # rad/s (a spin)
    count: int | None = None  # repetitions ("twice", "3 times", "2 full turns")
    repeat: bool = False  # "again and again": as often as it can
    poses: tuple[str, ...] = ()
    natural: bool = False
    quick: bool = False
    verb: str = ""  # the locomotion verb's lemma
    lateral: float | None = None  # walking to a side: +1 left, -1 right, 0 either
    quantities: tuple[Quantity, ...] = ()  # every number the step states


@dataclass
class Found:
    """What a clause's words said, gathered pass by pass (clauses.py) before the step rules."""

    cores: list[tuple[int, str, str]] = field(default_factory=list)  # (position, core, word)
    qualifiers: set[str] = field(default_factory=set)
    speeds: list[str] = field(default_factory=list)
    speed_words: list[str] = field(default_factory=list)  # as written ("quickly")
    lateral: list[float] = field(default_factory=list)  # "to the left" +1, right -1, sideways 0
    directions: list[float] = field(default_factory=list)
    sides: list[float] = field(default_factory=list)
    poses: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    repeat: bool = False
    natural: bool = False
    flip_way: float | None = None
    unmeasured: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    extras: list[tuple[int, str]] = field(default_factory=list)
    pose_verbs: list[str] = field(default_factory=list)
    keeps: list[int] = field(default_factory=list)
    ands: list[int] = field(default_factory=list)
    on_feet: bool = False  # "on its foot", "on all four legs": what carries the body
    # Words no table knows in a verb's place, before a direction ("blorft backward").
    unknown_verbs: list[str] = field(default_factory=list)


# Count nouns that name the behaviour they count ("two backflips", "3 jumps").
COUNT_NOUN_CORE = {
    **dict.fromkeys(words("jump jumps hop hops leap leaps bounce bounces"), "jump"),
    **dict.fromkeys(
        words("flip flips backflip backflips frontflip frontflips somersault somersaults"), "flip"
    ),
    **dict.fromkeys(words("roll rolls"), "roll"),
}
_POSTURES = frozenset({"stand", "sit", "squat", "lie", "stop"})
# Which cores absorb which when a clause names both ("jump and do a backflip" is a flip).
_ABSORBS: dict[str, frozenset[str]] = {
    "flip": frozenset({"jump", "locomotion"}),
    "rear_up": frozenset({"stand", "balance"}),
    "balance": frozenset({"stand"}),
    "reach": frozenset({"locomotion", "stop"}),
    "stop": frozenset({"locomotion", "stand", "spin"}),
    "spin": frozenset({"turn"}),
}
# What a number of each dimension can qualify.
_HEIGHT_CORES = frozenset({"jump", "stand", "sit", "squat", "lie", "pose", "rear_up", "flip"})
_ANGLE_CORES = frozenset({"turn", "spin", "pose", "rear_up", "flip"})
_COUNTED = frozenset({"jump", "flip", "roll", "spin", "turn", "squat", "sit", "lie", "stand"})
_JUMP_WORDS = frozenset({"high", "higher", "highest", "height", "air", "vertically"})
_REACH_WORDS = frozenset({"target", "goal", "fingertip"})
# A lean of a little or a lot, in radians (the plain lean is 0.35 rad, poses.LEAN).
LEAN_LITTLE, LEAN_MUCH = 0.2, 0.6
_LITTLE = frozenset({"slightly", "little", "bit", "gently", "subtly", "barely"})
_MUCH = frozenset({"lot", "far", "deeply", "strongly", "steeply", "sharply", "heavily"})
# Verbs that name no gait of their own when another behaviour is named beside them.
_WEAK_VERBS = frozenset({"go", "move", "travel", "proceed"})
_POLE_WORDS = frozenset({"pole", "poles", "pendulum", "link", "links"})


def _cores(f: Found, quantities: list[Quantity]) -> list[tuple[int, str, str]]:
    cores = list(f.cores)
    for q in quantities:
        core = COUNT_NOUN_CORE.get(q.unit_word)
        if core and not any(c[1] == core for c in cores):
            cores.append((q.start, core, q.unit_word))
            way = FLIP_WAY.get(q.unit_word)
            if way is not None:
                f.flip_way = way
    extras = {w for _, w in f.extras}
    if extras & _REACH_WORDS and not any(c[1] == "reach" for c in cores):
        cores.append((0, "reach", "target"))  # "move the fingertip to the goal"
    if extras & _POLE_WORDS and not any(c[1] not in ("stand", "stop", "pose") for c in cores):
        # "keep the pendulum upright"; in "make the pendulum walk" the pole is only named.
        cores.append((0, "balance", "pole"))
    if not cores and any(q.dimension == "turns" for q in quantities):
        cores.append((0, "spin", "turns"))
    if not cores and f.poses and (f.pose_verbs or quantities):
        cores.append((0, "pose", ""))  # "raise its arms", "lean forward 30 degrees"
    if (
        not cores
        and not f.unknown_verbs
        and (f.directions or any(q.dimension == "speed" for q in quantities))
    ):
        # "forward at 2 m/s": moving. Not after a word no table knows: in "blorft backward"
        # the unknown word may be the behaviour, and a walk would be a different request.
        cores.append((0, "locomotion", ""))
    cores.sort()
    return cores


def _hop_is_a_jump(f: Found, quantities: list[Quantity]) -> bool:
    """A hop is a jump when counted ("hop forward twice": two jumps that travel), or, with no
    direction, when high, repeated or named a jump; otherwise it is a bounding gait."""
    if f.counts or any(q.dimension == "count" for q in quantities):
        return True
    high = any(q.dimension == "height" for q in quantities)
    extras = {w for _, w in f.extras} & _JUMP_WORDS
    return not f.directions and (high or f.repeat or bool(extras))


def _resolve(cores: list[tuple[int, str, str]], f: Found, quantities: list[Quantity]):
    """The clause's cores after the shared-word rules, in order."""
    named = []
    for at, core, word in cores:
        if core == "locomotion" and word == "hop" and _hop_is_a_jump(f, quantities):
            core = "jump"
        named.append((at, core, word))
    kinds = {c for _, c, _ in named}
    others = kinds - {"locomotion"}
    if others and all(w in _WEAK_VERBS for _, c, w in named if c == "locomotion"):
        # "jump up and down, go as high as you can", "spin, keep going round": 'go' is no gait.
        named = [n for n in named if n[1] != "locomotion"]
        kinds = others
    if "reach" in kinds and len(kinds) > 1 and not {w for _, w in f.extras} & _REACH_WORDS:
        # "jump, try to reach about 1.8 metres": reaching a number, not a target.
        named = [n for n in named if n[1] != "reach"]
        kinds.discard("reach")
    on_one_leg = {"one_foot", "stand_left", "stand_right"} & set(f.poses)
    on_legs = any(p.endswith(("feet_up", "foot_up")) for p in f.poses)
    if (
        "balance" in kinds
        and (on_one_leg or on_legs or f.on_feet)
        and not {w for _, w in f.extras} & _POLE_WORDS
    ):
        # "balance on its left leg": standing on one leg, not a pole; "balance on the front
        # feet with the back legs lifted": holding that pose.
        held = "pose" if on_legs and not on_one_leg else "stand"
        named = [(a, held if c == "balance" else c, w) for a, c, w in named]
        kinds = {c for _, c, _ in named}
    for big, small in _ABSORBS.items():
        if big in kinds:
            kinds -= small - {big}
    if {"squat", "locomotion"} <= kinds:
        # "crouch low and creep forward": moving with the torso low, not a squat in place.
        kinds.discard("squat")
        if "torso_low" not in f.poses:
            f.poses.append("torso_low")
    if kinds == {"jump"} and f.directions and not _hop_is_a_jump(f, quantities):
        kinds = (kinds - {"jump"}) | {"locomotion"}  # "jump forward": a bounding gait
        named.append((named[0][0], "locomotion", "hop"))
    if (
        "turn" in kinds
        and "locomotion" in kinds
        and not any(q.dimension == "angle" for q in quantities)
    ):
        kinds.discard("turn")  # "walk forward turning left": a circle
        f.qualifiers.add("circle")
        f.qualifiers.add("cw" if f.sides and f.sides[-1] < 0 else "ccw")
    out: list[tuple[int, str, str]] = []
    for at, core, word in named:
        if core in kinds and not any(core == c for _, c, _ in out):
            out.append((at, core, word))
    return out


def lean_degree(tokens: list[str] | tuple[str, ...], poses: tuple[str, ...]) -> float | None:
    """ "Lean slightly", "lean back a lot": how far a lean goes where no angle is stated."""
    if not any(p.startswith("lean_") for p in poses):
        return None
    said = set(tokens)
    if said & _LITTLE:
        return LEAN_LITTLE
    if said & _MUCH:
        return LEAN_MUCH
    return None


def build_steps(tokens: list[str], f: Found, quantities: list[Quantity]) -> list[Step]:
    """The step(s) of a clause; [] when it names no behaviour."""
    cores = _resolve(_cores(f, quantities), f, quantities)
    if not cores:
        return []
    if len(cores) == 1:
        return [_step(cores[0], f, quantities, tokens)]
    if len(cores) == 2:
        first, second = cores
        split = [a for a in f.ands if first[0] < a < second[0]]
        if split and first[1] in _POSTURES:
            return _two(split[0], cores, f, quantities, tokens)
    names = ", ".join(dict.fromkeys(c for _, c, _ in cores))
    raise NotExpressible(
        f"it combines several behaviours at once ({names}); the offline author composes one "
        "behaviour at a time, or one after another with 'then'"
    )


def _two(at: int, cores, f: Found, quantities: list[Quantity], tokens: list[str]) -> list[Step]:
    """'stand up and walk forward': the posture first, then the rest (each with its words)."""
    before = [q for q in quantities if q.start < at]
    after = [q for q in quantities if q.start > at]
    first = _step(cores[0], Found(), before, tokens[:at])
    second = _step(cores[1], f, after, tokens[at + 1 :])
    if second.core in _POSTURES and second.count:
        # "sit down and stand up three times": the pair, three times over.
        return [first, replace(second, count=None)] * second.count
    return [first, second]


def _speed(f: Found, quantities: list[Quantity], verb: str) -> tuple[str, float | None, tuple]:
    for q in quantities:
        if q.dimension != "speed":
            continue
        if q.bound == "exact":
            return "exact", q.value, (None, None)
        if q.bound == "upper":
            return "band", None, (None, q.value)
        if q.bound == "lower":
            return "band", None, (q.value, None)
        return "band", None, (q.value, q.high)
    if f.speeds:
        return f.speeds[-1], None, (None, None)
    return VERB_SPEED.get(verb, "plain"), None, (None, None)


def _step(core_at: tuple[int, str, str], f: Found, quantities: list[Quantity], tokens) -> Step:
    at, core, word = core_at
    verb = word if core == "locomotion" else ""
    fields: dict = {"core": core, "tokens": tuple(tokens), "verb": verb}
    fields["qualifiers"] = frozenset(f.qualifiers)
    poses = tuple(f.poses)
    if core == "locomotion" and "knee_up" in poses:
        poses = tuple(p for p in poses if p != "knee_up")
        fields["qualifiers"] = fields["qualifiers"] | {"high_knees"}
    fields["poses"] = poses
    if lean_degree(tokens, poses) is not None:
        fields["angle"] = lean_degree(tokens, poses)
    fields["natural"] = f.natural
    fields["quick"] = "max" in f.speeds
    fields["repeat"] = f.repeat or any(k < at for k in f.keeps) and core in ("jump", "spin")
    fields["direction"] = _direction(core, f, verb)
    if core == "locomotion":
        speed, target, band = _speed(f, quantities, verb)
        fields.update(speed=speed, target_speed=target, speed_range=band)
        if "in_place" in f.qualifiers and f.speed_words:
            # "hop in place gently": moving on the spot has no travel speed to measure.
            f.unmeasured.extend(w for w in f.speed_words if w not in f.unmeasured)
        if "straight" in {w for _, w in f.extras}:
            fields["qualifiers"] = fields["qualifiers"] | {"straight"}
        if "circle" in f.qualifiers and f.sides and not f.qualifiers & {"cw", "ccw"}:
            # "walk in a circle to the right": clockwise.
            fields["qualifiers"] = fields["qualifiers"] | {"cw" if f.sides[-1] < 0 else "ccw"}
        if f.lateral and "circle" not in f.qualifiers:
            if f.directions:
                raise NotExpressible(
                    "it asks to move forward or backward and to a side at once; the offline "
                    "author rewards one direction of travel"
                )
            fields["lateral"] = f.lateral[-1]
    elif core == "balance" and "straight" in {w for _, w in f.extras}:
        fields["qualifiers"] = fields["qualifiers"] | {"upright"}  # "hold the links straight"
    elif f.speeds and core == "spin":
        fields["speed"] = f.speeds[-1]  # "spin slowly": the spin's rate
    elif f.speed_words and (core != "reach" or set(f.speeds) != {"max"}):
        # "stand up quickly": no criterion here measures how fast a posture is reached.
        f.unmeasured.extend(w for w in f.speed_words if w not in f.unmeasured)
    counts = list(f.counts)
    for q in quantities:
        _number(q, core, fields, counts)
    if counts:
        fields["count"] = counts[0]
    _check_extras(core, f)
    fields["quantities"] = tuple(quantities)
    return Step(**fields)


def _direction(core: str, f: Found, verb: str) -> float:
    if core == "locomotion":
        if verb in BACKWARD_VERBS:
            return -1.0
        return f.directions[-1] if f.directions else 1.0
    if core in ("spin", "turn"):
        if "cw" in f.qualifiers:
            return -1.0
        if "ccw" in f.qualifiers:
            return 1.0
        return f.sides[-1] if f.sides else 1.0
    if core == "flip":
        return f.flip_way if f.flip_way is not None else 1.0
    if core == "roll":
        # Rolling to the right lifts the left side first (positive roll); to the left, the
        # right side.
        return -1.0 if f.sides and f.sides[-1] > 0 else 1.0
    if core == "jump":
        return f.directions[-1] if f.directions else 0.0  # 0: on the spot
    return 1.0


def _number(q: Quantity, core: str, fields: dict, counts: list[int]) -> None:
    """Put one stated number where it belongs, or refuse it."""
    dim = q.dimension
    if dim == "speed":
        if core != "locomotion":
            raise NotExpressible(f"a speed ({q.text}) qualifies a gait, not {core}")
    elif dim == "rate":
        if core != "spin":
            raise NotExpressible(f"a turning rate ({q.text}) qualifies a spin, not {core}")
        fields["rate"] = q.value
    elif dim in ("length", "height"):
        if dim == "length" and core == "locomotion":
            fields["distance"] = q.value
        elif core in _HEIGHT_CORES:
            fields["height"] = q.value
            fields["height_rise"] = core in ("jump", "flip") and "height" not in q.limit_words
        else:
            raise NotExpressible(
                f"a length ({q.text}) says nothing the offline author measures for {core}"
            )
    elif dim == "time":
        if q.bound == "upper":
            fields["deadline"] = q.value
        else:
            fields["duration"] = q.value
    elif dim == "steps":
        fields["duration_steps"] = int(q.value)
    elif dim == "angle":
        leaning = any(p.startswith("lean_") for p in fields.get("poses", ()))
        if core not in _ANGLE_CORES and not leaning:  # "walk leaning forward 20 degrees"
            raise NotExpressible(f"an angle ({q.text}) says nothing about {core}")
        if core == "flip":
            counts.append(max(1, round(q.value / (2 * math.pi))))
        else:
            fields["angle"] = q.value
    elif dim in ("turns", "count"):
        if core not in _COUNTED and not (core == "locomotion" and dim == "turns"):
            raise NotExpressible(
                f"a count ({q.value:g}) says nothing the offline author can repeat for {core}"
            )
        counts.append(max(1, int(round(q.value))))


def _check_extras(core: str, f: Found) -> None:
    """Words only some behaviours take ("target", "poles"): said of another behaviour, they
    are listed as not measured (the reading says what it did not serve)."""
    allowed = CORE_EXTRAS.get(core, frozenset())
    for w in dict.fromkeys(w for _, w in f.extras if w not in allowed):
        said = f"'{w}' (not measured for {core})"
        if said not in f.unmeasured:
            f.unmeasured.append(said)
