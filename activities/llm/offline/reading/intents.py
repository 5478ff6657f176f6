"""What a template takes of an intent (`Intent`), the refusal the offline author raises, and
the behaviours no reward here can express.

The offline author must never pretend: reader.py reads every word of a prompt through the
lexicon (a behaviour, a number, a qualifier, a pose, a style it lists as not measured, or filler)
and refuses, naming them, the words it cannot place. A single plain behaviour keeps its tuned
template (matcher.py); anything more is composed (compose.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from activities.llm.offline.words.lexicon import LEGGED_VERBS, SWIM_VERBS

if TYPE_CHECKING:
    from activities.llm.offline.reading.reader import Parsed
    from activities.llm.offline.reading.steps import Step


@dataclass(frozen=True)
class Intent:
    """A prompt read as a behaviour family plus its modifiers (direction, speed, style)."""

    family: str  # locomotion, stand, squat, sit, spin, jump, balance, rear_up, reach
    direction: float = 1.0  # locomotion: +1 forward / -1 backward; spin: +1 ccw / -1 cw
    speed: str = "plain"  # locomotion: max, plain, slow, steady, exact
    target_speed: float | None = None  # m/s, for speed == "exact"
    natural: bool = False  # "natural gait", "smoothly": a stronger control penalty
    quick: bool = False
    still: bool = False
    in_place: bool = False
    verb: str = ""  # the locomotion verb, to catch "swim" on a legged robot
    utmost: bool = False  # "as high as possible": the height criterion is maximised


# Skills no reward here can express; named so the refusal can say what they are.


HEIGHT_WORDS = frozenset({"high", "far", "tall"})


def utmost_height(tokens: tuple[str, ...] | list[str]) -> bool:
    """Whether a step asks for the most height it can get: "as high as possible", "as high as
    it can", "highest" (its criterion is then maximised, not only reached)."""
    t = list(tokens)
    if "highest" in t:
        return True
    return any(
        t[i] == "as" and t[i + 1] in HEIGHT_WORDS and t[i + 2] == "as" for i in range(len(t) - 2)
    )


def verb_fits(verb: str, env_id: str) -> str | None:
    """None when the locomotion verb suits the body; else why not."""
    if verb in SWIM_VERBS and env_id != "Swimmer-v5":
        return f"'{verb}' needs a swimming body (Swimmer-v5), and {env_id} moves on land"
    if verb in LEGGED_VERBS and env_id == "Swimmer-v5":
        return f"'{verb}' needs legs, and Swimmer-v5 has none (try 'swim forward')"
    return None


# Qualifiers each template takes as it is (anything else is composed).
_TEMPLATE_QUALIFIERS: dict[str, frozenset[str]] = {
    "locomotion": frozenset(),
    "stand": frozenset({"still", "upright", "stay"}),
    "sit": frozenset({"stay", "still", "upright"}),
    "squat": frozenset({"stay", "still", "upright"}),
    "spin": frozenset({"in_place", "cw", "ccw"}),
    "jump": frozenset(),
    "balance": frozenset({"upright"}),
    "rear_up": frozenset({"stay"}),
    "reach": frozenset({"still"}),
}


def template_intent(parsed: Parsed) -> Intent | None:
    """The template reading of a single plain behaviour (None: it needs composing)."""
    step = parsed.single
    if step is None or step.core not in _TEMPLATE_QUALIFIERS:
        return None
    if not step.qualifiers <= _TEMPLATE_QUALIFIERS[step.core] or _stated(step):
        return None
    if step.core == "balance" and {"both", "two", "poles", "double"} & set(step.tokens):
        return None  # the composer checks that the env has two poles
    return Intent(
        family=step.core,
        direction=step.direction,
        speed=step.speed,
        target_speed=step.target_speed,
        natural=step.natural,
        quick=step.quick,
        still="still" in step.qualifiers,
        in_place="in_place" in step.qualifiers,
        verb=step.verb,
        utmost=utmost_height(step.tokens),
    )


def _stated(step: Step) -> bool:
    """Whether the step states more than a template takes (numbers, poses, repetitions)."""
    extra = (
        step.poses,
        step.count,
        step.repeat,
        step.height,
        step.distance,
        step.duration,
        step.duration_steps,
        step.deadline,
        step.angle,
        step.rate,
        step.lateral is not None,
    )
    # A spin's rate ("spin slowly") is composed; the spin template has one rate.
    paced = step.core == "spin" and step.speed != "plain"
    return any(x for x in extra) or step.speed == "band" or paced
