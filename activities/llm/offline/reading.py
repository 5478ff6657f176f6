"""Reading an intent as a composition: one core behaviour plus qualifiers.

"walk backward steadily without falling" is locomotion (backward, steady) with the qualifier
`no_fall`; "stand up from the ground and stay standing" is stand with `from_ground` and
`stay_up`. Qualifier phrases are found first (longest first) and taken out of the prompt; what is
left must name exactly one core behaviour, in words its vocabulary knows. Words that carry no
meaning here (articles, "please", the robot's name) are kept aside so the author can say it did
not use them; a word nobody knows still refuses the intent, naming it: the author never pretends.
"""

from __future__ import annotations

from dataclasses import dataclass

from activities.llm.offline.intents import (
    FILLER,
    LOCOMOTION_VERBS,
    MAX_SPEED,
    NATURAL,
    SLOW,
    SPEED_UNITS,
    STEADY,
    UNSUPPORTED,
    NotExpressible,
    is_number,
    speed_mode,
    stem,
    tokenize,
    words,
)

# Qualifier phrases, as token sequences after `tokenize` (which splits "counter-clockwise").
_PHRASES: dict[str, tuple[str, ...]] = {
    "no_fall": (
        "without falling over",
        "without falling down",
        "without falling",
        "without a fall",
        "without tipping over",
        "never falling",
        "never fall",
        "not falling",
        "don t fall",
        "do not fall",
    ),
    "whole_episode": (
        "for the whole episode",
        "for the entire episode",
        "the whole episode",
        "the entire episode",
        "whole episode",
        "for the whole time",
        "the whole time",
        "all the time",
        "throughout the episode",
        "until the end",
        "for as long as possible",
        "as long as possible",
    ),
    "from_ground": (
        "from the ground",
        "from the floor",
        "off the ground",
        "off the floor",
        "from lying down",
        "from lying",
    ),
    "in_place": ("in place", "on the spot", "in one place", "on one spot"),
    "still": (
        "and stay still",
        "stay still",
        "stays still",
        "keep still",
        "hold still",
        "remain still",
        "without moving",
        "motionless",
        "still",
    ),
    "stay_up": (
        "and stay standing",
        "stay standing",
        "keep standing",
        "remain standing",
        "stay upright",
        "stay up",
    ),
    "ccw": ("counter clockwise", "counterclockwise", "anti clockwise", "anticlockwise"),
    "cw": ("clockwise",),
    "circle": ("in a circle", "in circles", "around in a circle", "in a loop"),
    "high_knees": (
        "with high knees",
        "high knees",
        "lifting the knees high",
        "lifting its knees high",
        "knees high",
    ),
    "upright": ("upright", "vertical", "vertically"),
}
# Longest phrases first, so "without falling over" wins over "without falling".
_ORDERED = sorted(
    ((tuple(p.split()), name) for name, ps in _PHRASES.items() for p in ps),
    key=lambda item: -len(item[0]),
)

# Core behaviours and the words that name them (after qualifiers are taken out).
CORE_WORDS: dict[str, set[str]] = {
    "locomotion": LOCOMOTION_VERBS
    | words("forward forwards ahead backward backwards back reverse straight"),
    "stand": words("stand standing stands rise get"),
    "lie": words("lie lying lies lay laying down flat"),
    "balance": words("balance balanced balancing pole poles pendulum"),
    "spin": words("spin spinning spins rotate rotating turn turning twirl"),
    "jump": words("jump jumping jumps leap leaping bounce bouncing"),
    "reach": words("reach reaching touch touching target fingertip"),
    "squat": words("squat squatting crouch crouching"),
    "sit": words("sit sitting sits seated"),
}
# Words each core accepts beside its own (direction, speed, manner).
_CORE_EXTRA: dict[str, set[str]] = {
    "locomotion": MAX_SPEED | SLOW | STEADY | NATURAL | SPEED_UNITS | words("line far distance"),
    "stand": words("up tall taller straight"),
    "lie": words("down flat ground floor on back"),
    "balance": words("both two poles pole up keep long centered center centre"),
    "spin": MAX_SPEED | words("around left right"),
    "jump": words("high higher highest height up air repeatedly again"),
    "reach": words("quickly fast quick there precisely accurately tip move go point goal"),
    "squat": words("deep low down pose position"),
    "sit": words("up down upright position"),
}
# Filler the author mentions as not used when a prompt holds them (never articles and such).
_QUIET = words("a an the to and of in on at as with it its itself is are be then so that")


@dataclass(frozen=True)
class Reading:
    """A prompt read as a core behaviour, its qualifiers and what it left unused."""

    core: str
    qualifiers: frozenset[str]
    tokens: tuple[str, ...]  # the core's own words (qualifier phrases taken out)
    direction: float  # locomotion: +1 forward / -1 backward; spin/circle: +1 ccw / -1 cw
    speed: str  # locomotion: max, plain, slow, steady, exact
    target_speed: float | None
    natural: bool
    quick: bool
    verb: str
    unused: tuple[str, ...]  # filler words the composition did not use


def _take_phrases(tokens: list[str]) -> tuple[list[str], set[str]]:
    rest, found, i = [], set(), 0
    while i < len(tokens):
        for phrase, name in _ORDERED:
            if tuple(tokens[i : i + len(phrase)]) == phrase:
                found.add(name)
                i += len(phrase)
                break
        else:
            rest.append(tokens[i])
            i += 1
    return rest, found


def _cores(rest: list[str], qualifiers: set[str]) -> set[str]:
    ws, stems = set(rest), {stem(w) for w in rest}
    found = {core for core, vocab in CORE_WORDS.items() if ws & vocab or stems & vocab}
    if "hop" in stems and ws & {"high", "higher", "highest", "height"}:
        found.add("jump")
    # Shared words: the more specific behaviour wins.
    if "jump" in found and not stems & (LOCOMOTION_VERBS - {"hop"}):
        found.discard("locomotion")
    if "stand" in found and "lie" in found and ws & {"up", "get"} and "down" not in ws:
        found.discard("lie")  # "get up from lying" is standing up
    if "lie" in found and "down" in ws and "locomotion" in found and not stems & LOCOMOTION_VERBS:
        found.discard("locomotion")  # "lie down on its back": 'back' is not a direction here
    if "reach" in found:
        found.discard("locomotion")
    if "balance" in found:
        found.discard("stand")
    if "spin" in found and "locomotion" in found and not stems & LOCOMOTION_VERBS:
        found.discard("locomotion")
    if "circle" in qualifiers and "spin" in found and stems & LOCOMOTION_VERBS:
        found.discard("spin")  # "walk around in a circle"
    return found


def read(prompt: str) -> Reading:
    """The composition a prompt asks for; NotExpressible naming what stops it."""
    tokens = tokenize(prompt)
    if not tokens:
        raise NotExpressible("the prompt has no words")
    for w in tokens:
        if w in UNSUPPORTED:
            raise NotExpressible(UNSUPPORTED[w] + ", and no offline composition has one")
    rest, qualifiers = _take_phrases(tokens)
    found = _cores(rest, qualifiers)
    if not found:
        raise NotExpressible(
            "it names no behaviour the offline author knows (walk/run/hop/swim, stand, lie down, "
            "sit, squat, spin, jump, balance, reach)"
        )
    if len(found) > 1:
        raise NotExpressible(
            f"it combines several behaviours ({', '.join(sorted(found))}); the offline author "
            "composes one behaviour with qualifiers"
        )
    core = found.pop()
    known = CORE_WORDS[core] | _CORE_EXTRA[core]
    unknown = [
        w
        for w in rest
        if w not in known and w not in FILLER and stem(w) not in known and not is_number(w)
    ]
    if unknown:
        raise NotExpressible(
            f"the words '{' '.join(dict.fromkeys(unknown))}' ask for something no primitive "
            f"of the behaviour library measures for {core}"
        )
    ws = set(rest)
    direction = 1.0
    if core == "locomotion" and ws & {"backward", "backwards", "back", "reverse"}:
        direction = -1.0
    if "cw" in qualifiers or (core == "spin" and "right" in ws):
        direction = -1.0
    speed, target = speed_mode(rest) if core == "locomotion" else ("plain", None)
    unused = tuple(
        dict.fromkeys(w for w in rest if w in FILLER and w not in known and w not in _QUIET)
    )
    return Reading(
        core=core,
        qualifiers=frozenset(qualifiers),
        tokens=tuple(rest),
        direction=direction,
        speed=speed,
        target_speed=target,
        natural=bool(ws & NATURAL),
        quick=bool(ws & (MAX_SPEED | {"quickly"})),
        verb=next((stem(w) for w in rest if stem(w) in LOCOMOTION_VERBS), ""),
        unused=unused,
    )
