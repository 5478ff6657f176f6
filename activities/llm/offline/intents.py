"""Reading a one-sentence intent into a template family and its modifiers, conservatively.

The offline author must never pretend: every word of the prompt has to be understood (a known
keyword, modifier or filler word), otherwise the intent is rejected with the words it could not
place. That is what turns "sprint gracefully" into an honest refusal instead of a sprint. Intents
with qualifiers no template takes are read again by `reading.py` and composed by `compose.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class NotExpressible(ValueError):
    """The templates cannot express the intent; the message says why, in a clause."""


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


# Skills that need a sequenced, multi-phase reward; named so the refusal can say what they are.
UNSUPPORTED = {
    "backflip": "flips need a multi-phase reward (crouch, launch, rotate, land)",
    "frontflip": "flips need a multi-phase reward (crouch, launch, rotate, land)",
    "flip": "flips need a multi-phase reward (crouch, launch, rotate, land)",
    "somersault": "somersaults need a multi-phase reward (launch, rotate, land)",
    "cartwheel": "cartwheels need a multi-phase reward over the whole body",
    "handstand": "a handstand needs an inverted pose reward no template has",
    "headstand": "a headstand needs an inverted pose reward no template has",
    "dance": "dancing is a style, not a measurable target",
    "moonwalk": "moonwalking is a style, not a measurable target",
    "kick": "kicking needs a target object that the environment does not have",
    "throw": "throwing needs an object that the environment does not have",
    "climb": "climbing needs terrain that the environment does not have",
    "push": "pushing needs an object that the environment does not have",
    "carry": "carrying needs an object that the environment does not have",
    # A policy turns around where it is; these envs leave the body's x position out of what the
    # policy observes, so no reward can teach it where to turn.
    "forth": "going back and forth needs the policy to see where it is, and the env hides its "
    "x position from the policy",
}


def words(text: str) -> set[str]:
    """The whitespace-separated words of a vocabulary literal, as a set."""
    return set(text.split())


FILLER = words(
    """
    a an the to and then of in on at as with its it itself while please should must learn make
    let try be is are can could will would so that possible way manner do does doing perform
    performing keep keeping stay staying remain remaining hold holding robot agent policy body
    cheetah halfcheetah half ant hopper walker walker2d humanoid swimmer reacher arm pendulum
    cart creature very really much more most just
    """
)
MAX_SPEED = words("fast faster fastest quickly quick rapidly speed top max maximum maximal")
SLOW = words("slow slowly gently leisurely")
STEADY = words("steady steadily constant pace even")
NATURAL = words("natural naturally gait smooth smoothly efficient efficiently stable stably")
SPEED_UNITS = words("mps m s meter meters metre metres second per")

VOCAB: dict[str, set[str]] = {
    "locomotion": words(
        """
        walk walking walks run running runs hop hopping hops swim swimming swims move moving
        go going travel crawl crawling sprint sprinting jog jogging gallop galloping advance
        locomote slither dash forward forwards ahead backward backwards back reverse straight
        line far distance
        """
    )
    | MAX_SPEED
    | SLOW
    | STEADY
    | NATURAL
    | SPEED_UNITS,
    "stand": words("stand standing stands up upright tall taller straight still rise get"),
    "sit": words("sit sitting sits up upright down still position seated"),
    "squat": words("squat squatting deep crouch crouching low down pose position"),
    "spin": words(
        """
        spin spinning spins rotate rotating turn turning twirl pirouette place spot around
        circle circles clockwise counterclockwise anticlockwise counter anti left right yaw
        """
    )
    | MAX_SPEED,
    "jump": words(
        """
        jump jumping jumps leap leaping bounce bouncing hop hops hopping high higher highest
        height up air vertically repeatedly again
        """
    ),
    "balance": words(
        """
        balance balanced balancing pole poles upright up vertical steady stable inverted long
        fall falling over without letting centered center centre
        """
    ),
    "rear_up": words("stand standing rear hind back legs leg two up rise rearing balance"),
    "reach": words(
        """
        reach reaching touch touching target goal point quickly fast quick there still
        precisely accurately fingertip tip move go
        """
    ),
}

LOCOMOTION_VERBS = words(
    "walk run hop swim move go travel crawl sprint jog gallop advance locomote slither dash"
)
_LEGGED_VERBS = {"walk", "run", "hop", "sprint", "jog", "gallop", "crawl", "dash"}
_SWIM_VERBS = {"swim", "slither"}


def stem(word: str) -> str:
    """The locomotion verb behind an inflected form (running -> run, moving -> move)."""
    if word.endswith("ing"):
        base = word[:-3]
        for cand in (base, base[:-1] if len(base) > 2 and base[-1] == base[-2] else "", base + "e"):
            if cand in LOCOMOTION_VERBS:
                return cand
    if word.endswith("es") and word[:-2] in LOCOMOTION_VERBS:
        return word[:-2]
    if word.endswith("s") and word[:-1] in LOCOMOTION_VERBS:
        return word[:-1]
    return word


def tokenize(prompt: str) -> list[str]:
    """Lower-cased words and numbers of a prompt ('2 m/s' -> '2', 'mps')."""
    text = prompt.lower().replace("m/s", " mps ").replace("-", " ")
    return re.findall(r"\d+(?:\.\d+)?|[a-z0-9]+", text)


def families(tokens: list[str]) -> set[str]:
    """The behaviour families a prompt's words name; the more specific wins where words overlap."""
    ws = set(tokens)
    stems = {stem(w) for w in tokens}
    found: set[str] = set()
    if ws & {"rear", "hind"} or ("back" in ws and ws & {"legs", "leg"}):
        found.add("rear_up")
    if ws & {"squat", "squatting", "crouch", "crouching"}:
        found.add("squat")
    if ws & {"sit", "sitting", "sits", "seated"}:
        found.add("sit")
    if ws & {"jump", "jumping", "jumps", "leap", "leaping", "bounce", "bouncing"} or (
        "hop" in stems and ws & {"high", "higher", "highest", "height"}
    ):
        found.add("jump")
    if ws & {"spin", "spinning", "spins", "rotate", "rotating", "twirl", "pirouette"} or (
        ws & {"turn", "turning"} and ws & {"place", "spot", "around", "circles", "circle"}
    ):
        found.add("spin")
    if ws & {"reach", "reaching", "touch", "touching", "fingertip"}:
        found.add("reach")
    if ws & {"balance", "balanced", "balancing", "pole", "poles", "pendulum"}:
        found.add("balance")
    if ws & {"stand", "standing", "stands"} or {"get", "up"} <= ws:
        found.add("stand")
    if stems & LOCOMOTION_VERBS or ws & {"forward", "forwards", "backward", "backwards"}:
        found.add("locomotion")
    # Words that several families share: the more specific family wins.
    if "rear_up" in found:
        found -= {"stand", "balance"}
    if "jump" in found and not (stems & (LOCOMOTION_VERBS - {"hop"})):
        found.discard("locomotion")
    if "reach" in found:
        found.discard("locomotion")  # "move the fingertip to the target"
    if "balance" in found:
        found.discard("stand")
    return found


def parse(prompt: str) -> Intent:
    """The one behaviour a prompt asks for; NotExpressible when it names none, several, or a
    style no template measures."""
    tokens = tokenize(prompt)
    if not tokens:
        raise NotExpressible("the prompt has no words")
    for w in tokens:
        if w in UNSUPPORTED:
            raise NotExpressible(UNSUPPORTED[w] + ", and no offline template has one")
    found = families(tokens)
    if not found:
        raise NotExpressible(
            "it names no behaviour the templates know (walk/run/hop/swim, stand, sit, squat, "
            "spin, jump, balance, reach)"
        )
    if len(found) > 1:
        raise NotExpressible(
            f"it combines several behaviours ({', '.join(sorted(found))}); the offline "
            "templates express one at a time"
        )
    family = found.pop()
    allowed = FILLER | VOCAB[family]
    unknown = [
        w for w in tokens if w not in allowed and not is_number(w) and stem(w) not in allowed
    ]
    if unknown:
        raise NotExpressible(
            f"the words '{' '.join(dict.fromkeys(unknown))}' ask for a style or detail that no "
            f"{family} template measures"
        )
    return _modifiers(family, tokens)


def is_number(w: str) -> bool:
    """Whether a token is a number ('2', '1.5')."""
    return re.fullmatch(r"\d+(?:\.\d+)?", w) is not None


def _modifiers(family: str, tokens: list[str]) -> Intent:
    ws = set(tokens)
    direction = 1.0
    if family == "locomotion" and ws & {"backward", "backwards", "back", "reverse"}:
        direction = -1.0
    if family == "spin" and (("clockwise" in ws and not ws & {"counter", "anti"}) or "right" in ws):
        direction = -1.0
    speed, target = speed_mode(tokens) if family == "locomotion" else ("plain", None)
    verb = next((stem(w) for w in tokens if stem(w) in LOCOMOTION_VERBS), "")
    return Intent(
        family=family,
        direction=direction,
        speed=speed,
        target_speed=target,
        natural=bool(ws & NATURAL),
        quick=bool(ws & (MAX_SPEED | {"quickly"})),
        still=bool(ws & {"still", "steady", "stable"}),
        in_place=bool(ws & {"place", "spot"}),
        verb=verb,
    )


def speed_mode(tokens: list[str]) -> tuple[str, float | None]:
    """How fast a locomotion prompt asks to go: exact (with the stated m/s), slow, steady, max
    ("fast", "run", "sprint") or plain."""
    ws, stems = set(tokens), {stem(w) for w in tokens}
    target = explicit_speed(tokens)
    if target is not None:
        return "exact", target
    if ws & SLOW:
        return "slow", None
    if ws & STEADY:
        return "steady", None
    if ws & MAX_SPEED or stems & {"run", "sprint", "dash"}:
        return "max", None
    return "plain", None


def explicit_speed(tokens: list[str]) -> float | None:
    """A speed the prompt states ('at 1.5 m/s' -> 1.5), or None."""
    for i, w in enumerate(tokens[:-1]):
        if is_number(w) and tokens[i + 1] in {"mps", "m", "meters", "metres", "meter", "metre"}:
            return float(w)
    return None


def verb_fits(verb: str, env_id: str) -> str | None:
    """None when the locomotion verb suits the body; else why not."""
    if verb in _SWIM_VERBS and env_id != "Swimmer-v5":
        return f"'{verb}' needs a swimming body (Swimmer-v5), and {env_id} moves on land"
    if verb in _LEGGED_VERBS and env_id == "Swimmer-v5":
        return f"'{verb}' needs legs, and Swimmer-v5 has none (try 'swim forward')"
    return None
