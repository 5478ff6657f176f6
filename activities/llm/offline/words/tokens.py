"""Turning a prompt into tokens the reader can walk: words, numbers and clause marks.

Lower case; "m/s", "km/h", "°" and numbers glued to units ("2.5m/s", "3s") become separate
tokens; number words become numbers ("two" -> 2); hyphens and apostrophes split words
("counter-clockwise" -> counter clockwise, "don't" and "shouldn't" -> do not); commas,
semicolons and full stops become "," (a clause boundary). `lemma` finds the dictionary form of
an inflected verb or noun from a set of known ones, and `Phrases` finds the longest known phrase
at a position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

from activities.llm.offline.words.body_lexicon import BODY_PARTS
from activities.llm.offline.words.units import NUMBER_PHRASES, NUMBER_WORDS

V = TypeVar("V")
CLAUSE = ","

_SYMBOLS = (
    ("°", " deg "),
    ("km/h", " kmh "),
    ("cm/s", " cmps "),  # before m/s, which it contains
    ("m/s", " mps "),
    ("rad/s", " radps "),
    ("’", "'"),
    ("–", " "),
    ("—", " "),
    ("%", " percent "),
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?$")


def is_number(token: str) -> bool:
    """Whether a token is a number ('2', '1.5')."""
    return _NUMBER.match(token) is not None


def normalize(prompt: str) -> list[str]:
    """The prompt's tokens: words, numbers and "," for clause boundaries."""
    text = prompt.lower()
    for symbol, spoken in _SYMBOLS:
        text = text.replace(symbol, spoken)
    text = re.sub(r"(\d),(\d{3})\b", r"\1\2", text)  # 1,000 steps
    text = re.sub(r"(\d)\s*(?=[a-z])", r"\1 ", text)  # 3s -> 3 s, 0.5m -> 0.5 m
    text = re.sub(r"[,;:!?]|\.(?!\d)", " , ", text)
    tokens = re.findall(r"\d+(?:\.\d+)?|[a-z]+|,", text)
    tokens = _negations(tokens)
    tokens = _rewrite(_hedges(_numbers(tokens)))
    # No empty clauses: "a, , b" reads as "a , b", and no mark at either end.
    out: list[str] = []
    for tok in tokens:
        if tok == CLAUSE and (not out or out[-1] == CLAUSE):
            continue
        out.append(tok)
    while out and out[-1] == CLAUSE:
        out.pop()
    return out


# "shouldn't" splits into "shouldn t": the verb and its "not".
_CONTRACTED = {
    "don": "do", "doesn": "does", "didn": "did", "shouldn": "should", "mustn": "must",
    "can": "can", "won": "will", "isn": "is", "aren": "are", "wasn": "was", "weren": "were",
    "wouldn": "would", "couldn": "could", "needn": "need", "shan": "shall", "mightn": "might",
}  # fmt: skip
# An auxiliary before "not" says nothing more than "do not" ("it should not fall", "must not
# flip"): the lexicon's negated phrases are written with "do not".
_AUXILIARIES = frozenset(
    ("do", "does", "did", "should", "must", "shall", "will", "would", "can", "could", "may")
    + ("might", "need", "is", "are", "was", "were")
)


# "I'd like", "it'll", "you're": the clitic as its word.
_CLITICS = {"d": "would", "ll": "will", "ve": "have", "re": "are", "m": "am"}
# Possessives read as "its": the lexicon writes "land on its feet", people write "your feet".
_POSSESSIVES = frozenset({"your", "his", "her", "their", "my", "our"})


def _negations(tokens: list[str]) -> list[str]:
    """Contractions as their words ("don t" -> do not, "i d" -> i would), "<auxiliary> not"
    as "do not", and possessives as "its"."""
    tokens = [
        _CLITICS[t] if t in _CLITICS and i > 0 and tokens[i - 1].isalpha() else t
        for i, t in enumerate(tokens)
    ]
    tokens = ["its" if t in _POSSESSIVES else t for t in tokens]
    words: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] in _CONTRACTED and i + 1 < len(tokens) and tokens[i + 1] == "t":
            words += [_CONTRACTED[tokens[i]], "not"]
            i += 2
            continue
        words.append(tokens[i])
        i += 1
    out: list[str] = []
    for i, tok in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        out.append("do" if tok in _AUXILIARIES and nxt == "not" else tok)
    return out


def _numbers(tokens: list[str]) -> list[str]:
    """Number words and phrases ("a couple of", "half a") as digits."""
    phrases = _NUMBER_PHRASES
    out: list[str] = []
    i = 0
    while i < len(tokens):
        found = phrases.at(tokens, i)
        if found is not None:
            end, value = found
            out.append(value)
            i = end
            continue
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        # "one knee", "two poles": which parts, not a count of the behaviour.
        prev = out[-1] if out else ""
        # "each one", "that one": a thing pointed at, not a count.
        pointed = tok == "one" and prev in ("each", "every", "that", "this", "the", "which")
        word = (
            pointed
            or (tok == "one" and nxt in ("of", "after", "another"))
            or (
                tok in ("one", "two")
                and (nxt in BODY_PARTS or nxt in ("pole", "poles", "link", "links"))
            )
        )
        out.append(_digits(NUMBER_WORDS[tok]) if tok in NUMBER_WORDS and not word else tok)
        i += 1
    return out


# A hedge between a bound and its number ("within about 1 second") says the number is
# approximate, which every target already is (criteria carry tolerances): the bound decides.
_HEDGES = frozenset({"about", "around", "roughly", "approximately", "approx", "nearly", "some"})
_BOUNDS = frozenset({"within", "in", "under", "than", "least", "most", "to", "by", "of", "for"})


def _hedges(tokens: list[str]) -> list[str]:
    return [
        t
        for i, t in enumerate(tokens)
        if not (
            t in _HEDGES
            and 0 < i < len(tokens) - 1
            and tokens[i - 1] in _BOUNDS
            and is_number(tokens[i + 1])
        )
    ]


# Idioms that name a number: "turn around to face the other way" is a half turn.
_IDIOMS = {
    tuple(k.split()): v.split()
    for k, v in {
        "turn around to face the other way": "turn 180 deg",
        "turn around and face the other way": "turn 180 deg",
        "turn to face the other way": "turn 180 deg",
        "turn around to face the opposite way": "turn 180 deg",
        "turn to face the opposite direction": "turn 180 deg",
        "turn around to face the opposite direction": "turn 180 deg",
        "face the other way": "turn 180 deg",
        "face the opposite way": "turn 180 deg",
        "face the opposite direction": "turn 180 deg",
        "do an about face": "turn 180 deg",
        "about face": "turn 180 deg",
        "u turn": "turn 180 deg",
        "make a u turn": "turn 180 deg",
        "do a u turn": "turn 180 deg",
    }.items()
}
_IDIOM_LONGEST = max(len(k) for k in _IDIOMS)


def _rewrite(tokens: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(tokens):
        for n in range(min(_IDIOM_LONGEST, len(tokens) - i), 1, -1):
            said = _IDIOMS.get(tuple(tokens[i : i + n]))
            if said is not None:
                out += said
                i += n
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


def _digits(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class Phrases(Generic[V]):
    """Known phrases (as space-separated text) and what each means; `at` finds the longest
    one starting at a position."""

    def __init__(self, table: Mapping[str, V]) -> None:
        self.table = {tuple(k.split()): v for k, v in table.items()}
        self.longest = max((len(k) for k in self.table), default=0)

    def at(self, tokens: list[str], i: int) -> tuple[int, V] | None:
        """(end index, meaning) of the longest phrase at tokens[i:], or None."""
        for n in range(min(self.longest, len(tokens) - i), 0, -1):
            hit = self.table.get(tuple(tokens[i : i + n]))
            if hit is not None:
                return i + n, hit
        return None


_NUMBER_PHRASES = Phrases(NUMBER_PHRASES)

_IRREGULAR = {
    "ran": "run", "went": "go", "gone": "go", "goes": "go", "swam": "swim", "swum": "swim",
    "lying": "lie", "lain": "lie", "lies": "lie", "laid": "lay", "sat": "sit", "stood": "stand",
    "rose": "rise", "risen": "rise", "spun": "spin", "leapt": "leap", "sprang": "spring",
    "sprung": "spring", "feet": "foot", "knelt": "kneel", "held": "hold", "kept": "keep",
    "bent": "bend", "rode": "ride", "dove": "dive", "flew": "fly",
}  # fmt: skip


def lemma(word: str, known: Iterable[str] | frozenset[str] | set[str]) -> str:
    """The known dictionary form of an inflected word (running -> run, moves -> move, hopped
    -> hop), or the word itself when no form of it is known."""
    vocab = known if isinstance(known, set | frozenset) else set(known)
    if word in vocab:
        return word
    if word in _IRREGULAR and _IRREGULAR[word] in vocab:
        return _IRREGULAR[word]
    for suffix in ("ing", "ed", "es", "s"):
        if not word.endswith(suffix) or len(word) <= len(suffix) + 1:
            continue
        base = word[: -len(suffix)]
        candidates = [base, base + "e"]
        if len(base) > 2 and base[-1] == base[-2]:
            candidates.append(base[:-1])  # running -> run, hopped -> hop
        if suffix == "es" and base.endswith("i"):
            candidates.append(base[:-1] + "y")
        for cand in candidates:
            if cand in vocab:
                return cand
    return word
