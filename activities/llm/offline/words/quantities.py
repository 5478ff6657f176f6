"""Numbers with units in a prompt, and the limits around them.

"at 2.5 m/s" is a speed of 2.5 m/s; "no quicker than 1 m/s" an upper bound on it; "between 1
and 2 m/s" a range; "0.5 m high" a height; "for 3 seconds" a duration; "90 degrees" an angle;
"3 times" a count. Each is found with the tokens it covers, so the reader can take them out of
the prompt; the dimension comes from the unit (lexicon.UNITS), the role from the words around
it (a length followed by "high" is a height).
"""

from __future__ import annotations

from dataclasses import dataclass

from activities.llm.offline.words.refusals import NotExpressible
from activities.llm.offline.words.tokens import CLAUSE, Phrases, is_number
from activities.llm.offline.words.units import HEIGHT_WORDS, LIMITS, UNIT_PHRASES, UNITS

_UNITS = Phrases({**UNIT_PHRASES, **{u: u for u in UNITS}})
_LIMIT_ENDINGS = {tuple(k.split()): v for k, v in LIMITS.items()}
_LONGEST_LIMIT = max(len(k) for k in _LIMIT_ENDINGS)


@dataclass(frozen=True)
class Quantity:
    """A number the prompt states, in SI units (m, s, m/s, rad, or a count)."""

    dimension: str  # speed, length, height, time, steps, angle, turns, count, rate
    value: float  # the number (the lower bound of a range)
    bound: str = "exact"  # exact, upper (at most), lower (at least), range
    high: float | None = None  # the upper end of a range
    unit_word: str = ""  # the count noun ("jumps", "flips") where it names the behaviour
    limit_words: str = ""  # the words that bounded it ("no quicker than")
    start: int = 0
    end: int = 0  # token span [start, end)

    @property
    def text(self) -> str:
        """How the number reads back in a summary ("at most 2 m/s")."""
        unit = {"speed": " m/s", "length": " m", "height": " m", "time": " s", "angle": " rad",
                "rate": " rad/s"}.get(self.dimension, "")  # fmt: skip
        if self.bound == "range" and self.high is not None:
            return f"between {self.value:g} and {self.high:g}{unit}"
        word = {"upper": "at most ", "lower": "at least "}.get(self.bound, "")
        return f"{word}{self.value:g}{unit}"


def _limit_before(tokens: list[str], i: int) -> tuple[str, str, int]:
    """(bound, words, start) of the limit phrase that ends right before tokens[i]."""
    for n in range(min(_LONGEST_LIMIT, i), 0, -1):
        key = tuple(tokens[i - n : i])
        if key in _LIMIT_ENDINGS:
            return _LIMIT_ENDINGS[key], " ".join(key), i - n
    return "exact", "", i


def _unit_after(tokens: list[str], i: int) -> tuple[str, int] | None:
    found = _UNITS.at(tokens, i)
    if found is None:
        return None
    end, unit = found
    return unit, end


def find(tokens: list[str], taken: list[bool]) -> list[Quantity]:
    """Every number with a unit, with the limit and height words around it; the tokens each
    covers are marked in `taken`. NotExpressible for a number whose unit is missing or unknown."""
    out: list[Quantity] = []
    i = 0
    while i < len(tokens):
        if taken[i] or not is_number(tokens[i]):
            i += 1
            continue
        q = _one(tokens, i)
        if q is None:
            i += 1
            continue
        for k in range(q.start, q.end):
            taken[k] = True
        out.append(q)
        i = q.end
    return out


def _one(tokens: list[str], i: int) -> Quantity | None:
    value = float(tokens[i])
    high: float | None = None
    end = i + 1
    bound, limit_words, start = _limit_before(tokens, i)
    # "between 1 and 2 m/s", "from 1 to 2 m/s": a range, its unit after the second number.
    ranged = i >= 1 and tokens[i - 1] in ("between", "from") and end + 1 < len(tokens)
    if ranged and tokens[end] in ("and", "to") and is_number(tokens[end + 1]):
        high, end, bound, start = float(tokens[end + 1]), end + 2, "range", i - 1
        limit_words = ""
    unit = _unit_after(tokens, end)
    if unit is None:
        return None  # a bare number: the reader decides (a count after a verb, or not)
    name, end = unit
    dimension, factor = UNITS[name]
    if dimension == "length" and end < len(tokens) and tokens[end] in HEIGHT_WORDS:
        # "0.5 m high", "1 m into the air", "20 cm off the ground".
        dimension = "height"
        while end < len(tokens) and tokens[end] in HEIGHT_WORDS | {"into", "the", "off", "in"}:
            end += 1
    if dimension == "length" and "height" in limit_words:
        dimension = "height"  # "to a height of 1.8 m"
    value *= factor
    high = None if high is None else high * factor
    if high is not None and high < value:
        value, high = high, value
    count_noun = name if dimension == "count" and name not in _PLAIN_COUNTS else ""
    return Quantity(dimension, value, bound, high, count_noun, limit_words, start, end)


_PLAIN_COUNTS = frozenset({"time", "times", "repetition", "repetitions", "reps", "rep", "x"})


def bare_number(tokens: list[str], i: int) -> NotExpressible:
    """The refusal for a number whose meaning the prompt does not give."""
    around = " ".join(t for t in tokens[max(0, i - 2) : i + 2] if t != CLAUSE)
    return NotExpressible(
        f"the number in '{around}' has no unit the offline author knows (m/s, km/h, m, cm, s, "
        "steps, degrees, turns, times)"
    )
