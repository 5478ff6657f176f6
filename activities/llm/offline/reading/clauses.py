"""Reading one clause of a prompt (the words between two sequence words) into a step.

Passes, each taking the words it understands out of the clause: numbers with units and their
limits (quantities.py); comparisons ("like a cat") and whole phrases of the lexicon, longest
first (qualifiers, speeds, poses, multi-word cores, repetitions, style); manner phrases ("with a
relaxed stride", "in a playful way"); body parts with their states (body_words.py); then single
words by their lemma. What is left is a word no table knows, and refuses the intent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from activities.llm.offline.reading.steps import Found, Step, build_steps, lean_degree
from activities.llm.offline.words.body_lexicon import (
    BODY_PARTS,
    LEAN_VERBS,
    POSE_PHRASES,
    POSE_STATES,
    POSE_TAILS,
    POSE_VERBS,
)
from activities.llm.offline.words.body_words import read_poses
from activities.llm.offline.words.lexicon import (
    COMPARISON,
    CORE_EXTRAS,
    CORE_PHRASES,
    CORE_VERBS,
    DETAILS,
    DIRECTIONS,
    FILLER,
    FLIP_WAY,
    KEEP,
    LATERAL,
    MANNER_NOUNS,
    NATURAL,
    NATURAL_PHRASES,
    QUALIFIERS,
    QUIET,
    REPEAT_PHRASES,
    SIDES,
    SPEED_PHRASES,
    SPEED_WORDS,
    STYLE,
    STYLE_PHRASES,
    words,
)
from activities.llm.offline.words.quantities import Quantity, bare_number, find
from activities.llm.offline.words.refusals import NotExpressible
from activities.llm.offline.words.tokens import CLAUSE, Phrases, is_number, lemma
from activities.llm.offline.words.units import COUNT_WORDS

_PHRASES: Phrases[tuple[str, str]] = Phrases(
    {
        **{k: ("detail", v) for k, v in DETAILS.items()},
        **{k: ("lateral", str(v)) for k, v in LATERAL.items()},
        **{k: ("style", v) for k, v in STYLE_PHRASES.items()},
        **{k: ("repeat", v) for k, v in REPEAT_PHRASES.items()},
        **{k: ("natural", v) for k, v in NATURAL_PHRASES.items()},
        **{k: ("speed", v) for k, v in SPEED_PHRASES.items()},
        **{k: ("qual", v) for k, v in QUALIFIERS.items()},
        **{k: ("pose", v) for k, v in POSE_PHRASES.items()},
        **{k: ("core", v) for k, v in CORE_PHRASES.items()},
    }
)
_COMPARISON = Phrases(COMPARISON)
_TAILS = Phrases(POSE_TAILS)
_KNOWN_LEMMAS = frozenset(CORE_VERBS) | POSE_VERBS | LEAN_VERBS
# Where a comparison or manner phrase stops: the next clause, or a word that starts a new part.
_STYLE_STOPS = frozenset({CLAUSE, "and", "while", "whilst", "then", "with", "without", "at"})
_DETERMINERS = words("a an its some good great his her their")
_MANNER_FRAMES = frozenset({"way", "manner", "fashion", "style"})
# Qualifiers that the body-part rule finds ("knees high", "torso straight").
_POSE_QUALIFIERS = frozenset({"high_knees", "upright"})


@dataclass
class Clause:
    """What one clause said: its steps, or qualifiers/counts for the step before it."""

    steps: list[Step] = field(default_factory=list)
    qualifiers: frozenset[str] = frozenset()
    poses: tuple[str, ...] = ()
    count: int | None = None
    repeat: bool = False
    unmeasured: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Words no table knows: listed as not read when the prompt names a behaviour elsewhere,
    # named in the refusal when it names none (a word alone never refuses an intent).
    unknown: list[str] = field(default_factory=list)

    angle: float | None = None  # a lean's angle said in words ("a lot", "slightly")

    def as_step(self) -> Step:
        """This clause as a step of its own: being still, or holding a pose."""
        core = "pose" if self.poses else "stop"
        return Step(core, self.qualifiers, poses=self.poses, angle=self.angle)


def _free(taken: list[bool], i: int, end: int) -> bool:
    return not any(taken[i:end])


def _spans(tokens: list[str], taken: list[bool], f: Found) -> None:
    """Comparisons and lexicon phrases, longest first."""
    i = 0
    while i < len(tokens):
        cmp = _COMPARISON.at(tokens, i)
        if cmp is not None and _free(taken, i, cmp[0]) and not _comparison_is_filler(tokens, i):
            end = cmp[0]
            while (
                end < len(tokens) and tokens[end] not in _STYLE_STOPS and not is_number(tokens[end])
            ):
                end += 1
            f.unmeasured.append(" ".join(tokens[i:end]))
            for k in range(i, end):
                taken[k] = True
            i = end
            continue
        hit = _PHRASES.at(tokens, i)
        if hit is None or not _free(taken, i, hit[0]):
            i += 1
            continue
        end, (kind, value) = hit
        if value == "from_ground" and any(t in BODY_PARTS for t in tokens[max(0, i - 3) : i]):
            i += 1  # "the other foot off the ground": a part lifted, read with the part
            continue
        text = " ".join(tokens[i:end])
        _phrase(f, kind, value, text, i)
        tail = _TAILS.at(tokens, end) if kind == "pose" else None
        if tail is not None and _free(taken, end, tail[0]):
            end = tail[0]  # "lift its front legs" + "off the ground": one pose
        for k in range(i, end):
            taken[k] = True
        i = end


def _pose(f: Found, pose: str) -> None:
    """A pose, or a qualifier a pose phrase names ("knees high", "torso straight")."""
    if pose in _POSE_QUALIFIERS:
        f.qualifiers.add(pose)
    elif pose not in f.poses:
        f.poses.append(pose)


def _comparison_is_filler(tokens: list[str], i: int) -> bool:
    """ "I'd like it to walk": 'like' before it/to is a wish, not a comparison."""
    if tokens[i] != "like":
        return False
    wish = i > 0 and tokens[i - 1] in ("would", "i", "we", "you", "should")
    return wish or (i + 1 < len(tokens) and tokens[i + 1] in ("it", "to", "this"))


def _phrase(f: Found, kind: str, value: str, text: str, at: int) -> None:
    if kind == "core":
        f.cores.append((at, value, text))
        if text.endswith(("in place", "on the spot")):
            f.qualifiers.add("in_place")  # "spin in place"
        if text in FLIP_WAY:
            f.flip_way = FLIP_WAY[text]
        if value == "locomotion" and text in ("back up", "in reverse"):
            f.directions.append(-1.0)
    elif kind == "pose":
        _pose(f, value)
    elif kind == "qual":
        f.qualifiers.add(value)
    elif kind == "speed":
        f.speeds.append(value)
        f.speed_words.append(text)
    elif kind == "natural":
        f.natural = True
        f.unmeasured.append(text)
    elif kind == "repeat":
        f.repeat = True
    elif kind == "lateral":
        f.lateral.append(float(value))
        if float(value):
            f.sides.append(float(value))  # "turn to the left"
    else:  # style, detail
        f.unmeasured.append(text)


def _manner(tokens: list[str], taken: list[bool], f: Found) -> None:
    """ "with a relaxed stride", "in a playful way", "long strides": manner the reward cannot
    measure."""
    for i, tok in enumerate(tokens):
        if taken[i] or tok not in ("with", "in"):
            continue
        j = i + 1
        while j < len(tokens) and tokens[j] in _DETERMINERS and not taken[j]:
            j += 1
        end = None
        for k in range(j, min(j + 5, len(tokens))):
            if tokens[k] == CLAUSE:
                continue  # "with long, relaxed strides"
            if taken[k] or tokens[k] in _STYLE_STOPS:
                break
            nouns = MANNER_NOUNS if tok == "with" else _MANNER_FRAMES
            if tokens[k] in nouns:
                end = k + 1
        if end is None:
            continue
        _manner_phrase(f, tokens[i:end])
        for k in range(i, end):
            taken[k] = True
    for k, tok in enumerate(tokens):
        if taken[k] or tok not in MANNER_NOUNS:
            continue
        start = k
        while (
            start > 0 and k - start < 2 and not taken[start - 1] and _adjective(tokens[start - 1])
        ):
            start -= 1
        _manner_phrase(f, tokens[start : k + 1])
        for j in range(start, k + 1):
            taken[j] = True


def _manner_phrase(f: Found, words: list[str]) -> None:
    """A manner phrase is style, listed as not measured, unless it names a pace ("with a steady
    gait", "at a slow stride"): then it is that speed, which is measured."""
    paces = [w for w in words if w in SPEED_WORDS]
    if paces:
        f.speeds.append(SPEED_WORDS[paces[-1]])
        f.speed_words.append(" ".join(words).replace(f" {CLAUSE}", CLAUSE))
        return
    f.unmeasured.append(" ".join(words).replace(f" {CLAUSE} ", f"{CLAUSE} "))


def _adjective(tok: str) -> bool:
    """A word that can only describe a manner noun here (no behaviour, number or filler)."""
    known = (
        lemma(tok, _KNOWN_LEMMAS) in _KNOWN_LEMMAS
        or tok in FILLER
        or tok in DIRECTIONS
        or tok in SPEED_WORDS
        or tok == CLAUSE
        or is_number(tok)
    )
    return not known


# Words that grade the word after them ("very slowly", "fairly quickly", "slightly forward").
DEGREE = words(
    "very extremely really super incredibly insanely fairly quite somewhat rather pretty "
    "moderately reasonably slightly too so"
)


def _graded(tok: str) -> bool:
    return tok in SPEED_WORDS or tok in POSE_STATES or tok in DIRECTIONS


# Words that negate the behaviour after them ("do not flip", "never spin", "no spinning").
NEGATORS = frozenset({"not", "never", "no", "nor"})


def _negated(tokens: list[str], taken: list[bool], f: Found) -> None:
    """A behaviour said not to be done is not read as one to do: the phrase ("not flip") is
    listed as not measured (no reward here penalises a behaviour by name), and its words are
    taken. Negated phrases the lexicon knows ("do not fall") were taken before this."""
    for i, tok in enumerate(tokens):
        if taken[i] or tok not in NEGATORS:
            continue
        j = i + 1
        while j < len(tokens) and tokens[j] in ("a", "an", "the", "any", "do", "to"):
            j += 1
        if j < len(tokens) and not taken[j] and lemma(tokens[j], _KNOWN_LEMMAS) in CORE_VERBS:
            f.unmeasured.append(" ".join(tokens[i : j + 1]))
            for k in range(i, j + 1):
                taken[k] = True


def _words(tokens: list[str], taken: list[bool], f: Found) -> list[str]:
    """Single words; returns the ones no table knows."""
    _negated(tokens, taken, f)
    unknown: list[str] = []
    extras = frozenset().union(*CORE_EXTRAS.values())
    for i, tok in enumerate(tokens):
        if taken[i] or tok == CLAUSE:
            continue
        base = lemma(tok, _KNOWN_LEMMAS)
        if is_number(tok):
            prior = [c for c in f.cores if c[0] < i]
            counted = ("jump", "flip", "roll", "spin")
            after = [CORE_VERBS.get(lemma(t, _KNOWN_LEMMAS)) for t in tokens[i + 1 : i + 3]] + [
                c[1] for c in f.cores if i < c[0] <= i + 2
            ]
            before = bool(prior) and prior[-1][1] in counted
            if (before or any(a in counted for a in after)) and float(tok).is_integer():
                f.counts.append(int(float(tok)))  # "jump 3", "do 2 front flips"
                continue
            raise bare_number(tokens, i)
        if tok in COUNT_WORDS:
            f.counts.append(COUNT_WORDS[tok])
        elif base in CORE_VERBS:
            f.cores.append((i, CORE_VERBS[base], base))
            if tok in FLIP_WAY:
                f.flip_way = FLIP_WAY[tok]
        elif tok in KEEP:
            f.keeps.append(i)
        elif tok in DIRECTIONS:
            f.directions.append(DIRECTIONS[tok])
        elif tok in SIDES:
            f.sides.append(SIDES[tok])
        elif tok in SPEED_WORDS:
            f.speeds.append(SPEED_WORDS[tok])
            f.speed_words.append(tok)
        elif tok in NATURAL:
            f.natural = True
            f.unmeasured.append(tok)
        elif tok == "and":
            f.ands.append(i)
        elif tok in DEGREE and i + 1 < len(tokens) and _graded(tokens[i + 1]):
            continue  # "extremely fast", "slightly bent": read with the word it grades
        elif tok in STYLE:
            f.unmeasured.append(tok)
        elif tok in FILLER:
            if tok not in QUIET:
                f.unused.append(tok)
        elif tok.endswith("ly") and len(tok) > 4 and tok not in extras:
            f.unmeasured.append(tok)  # an adverb of manner no table knows: style
        elif tok in extras:
            f.extras.append((i, tok))
        elif base in POSE_VERBS or base in LEAN_VERBS:
            f.pose_verbs.append(tok)
        else:
            unknown.append(tok)
            if i + 1 < len(tokens) and tokens[i + 1] in DIRECTIONS:
                f.unknown_verbs.append(tok)
    return unknown


def read_clause(tokens: list[str]) -> Clause:
    """The step(s) one clause asks for, or what it adds to the step before it."""
    taken = [False] * len(tokens)
    quantities = find(tokens, taken)
    f = Found()
    _spans(tokens, taken, f)
    _manner(tokens, taken, f)
    poses, unread = read_poses(tokens, taken, [*f.poses, *f.qualifiers])
    for pose in poses:
        _pose(f, pose)
    f.unmeasured += unread
    if any(p.endswith("_foot_up") and p.count("_") == 3 for p in f.poses):
        f.poses = [p for p in f.poses if p != "one_foot"]  # "on 3 legs, the front left lifted"
    f.on_feet = _on_feet(tokens)
    unknown = _words(tokens, taken, f)
    if f.pose_verbs and not f.poses:
        # "bend gracefully": a movement of no part the library measures, listed, not refused.
        f.unmeasured.append(f"'{' '.join(f.pose_verbs)}' (names no body part it measures)")
    clause = Clause(unmeasured=f.unmeasured, unused=f.unused, unknown=unknown)
    clause.notes = [
        f"{q.value:.3g} m/s is {q.value * 3.6:g} km/h as written"
        for q in quantities
        if q.dimension == "speed" and "kmh" in tokens
    ]
    clause.steps = build_steps(tokens, f, quantities)
    clause.qualifiers = frozenset(f.qualifiers)
    clause.poses = tuple(f.poses)
    clause.angle = lean_degree(tokens, clause.poses)
    clause.count = f.counts[0] if f.counts else None
    clause.repeat = f.repeat
    if not clause.steps:
        _no_step_left(f, quantities)
    return clause


_CARRIERS = frozenset({"foot", "feet", "leg", "legs", "paw", "paws", "toes", "hooves"})


def _on_feet(tokens: list[str]) -> bool:
    """Whether the clause says what carries the body ("balance on its foot"): then 'balance'
    is standing, not a pole."""
    for i, tok in enumerate(tokens):
        if tok != "on":
            continue
        j = i + 1
        while j < len(tokens) and tokens[j] in ("its", "the", "both", "all", "4", "2", "one"):
            j += 1
        if j < len(tokens) and tokens[j] in _CARRIERS:
            return True
    return False


def _no_step_left(f: Found, quantities: list[Quantity]) -> None:
    """A clause without a behaviour may only qualify the step before it."""
    if quantities and not f.counts:
        said = ", ".join(q.text for q in quantities)
        raise NotExpressible(f"'{said}' is said of no behaviour")
