"""The offline reader: a prompt read into one or more behaviours, with what qualifies each.

"Sprint at 2.5 m/s without falling, then slow to a walk gracefully" reads as two steps: a
sprint (locomotion, forward, exact speed 2.5 m/s, without falling) then a walk (locomotion,
slow); "gracefully" is a style it understands and cannot measure, so it is listed as such and
never refuses the intent. The reader walks the tables of `lexicon.py` (phrases longest first,
then single words by their lemma); a word no table knows never refuses an intent on its own: it
is listed as not read ("partly expressed"), and named in the refusal of a prompt in which no
behaviour was found. The offline author never pretends. `clauses.py` reads one clause; this
module splits the prompt into clauses at sequence words ("then", "after that", "and finally")
and puts the steps together.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from activities.llm.offline.reading.clauses import NEGATORS, Clause, Step, read_clause
from activities.llm.offline.words.lexicon import FIRST, SEQUENCE
from activities.llm.offline.words.refusals import UNSUPPORTED, NotExpressible
from activities.llm.offline.words.tokens import CLAUSE, Phrases, lemma, normalize

MAX_STEPS = 8  # SHAPING allows 8 phases: the most steps one reward can sequence
# Steps that hold a posture: "then stay still" after one of them is a qualifier of it, not a
# step of its own.
STATIC = frozenset({"stand", "sit", "squat", "lie", "pose", "balance", "reach", "rear_up", "stop"})

_SEQUENCE = Phrases(SEQUENCE)
# Behaviours named again by their object ("the target", "the pole") rather than a verb.
_HELD = frozenset({"reach", "balance", "pose"})


@dataclass(frozen=True)
class Parsed:
    """A prompt read as steps done one after another (one step: a single behaviour)."""

    steps: tuple[Step, ...]
    unmeasured: tuple[str, ...] = ()  # style words and details no primitive measures
    unused: tuple[str, ...] = ()  # filler words the composition did not use (please, robot)
    notes: tuple[str, ...] = ()  # how numbers were read (units converted)

    @property
    def single(self) -> Step | None:
        """The only step, or None for a sequence."""
        return self.steps[0] if len(self.steps) == 1 else None


def _segments(tokens: list[str]) -> list[list[str]]:
    """The prompt cut at sequence words, in the order the steps happen."""
    if tokens and tokens[0] == "after" and CLAUSE in tokens:
        # "after standing up, walk forward": the first clause happens first.
        cut = tokens.index(CLAUSE)
        return [p for p in (_segments(tokens[1:cut]) + _segments(tokens[cut + 1 :])) if p]
    parts: list[list[str]] = [[]]
    swap: list[int] = []  # "A after B": B happens first
    i = 0
    while i < len(tokens):
        hit = _SEQUENCE.at(tokens, i)
        if hit is not None and parts[-1] and any(t != CLAUSE for t in parts[-1]):
            parts.append([])
            end = hit[0]
            i = end
            continue
        if tokens[i] == "after" and i > 0 and parts[-1]:
            swap.append(len(parts))
            parts.append([])
            i += 1
            continue
        parts[-1].append(tokens[i])
        i += 1
    for at in reversed(swap):
        parts[at - 1], parts[at] = parts[at], parts[at - 1]
    cleaned = [[t for t in p if t not in FIRST] for p in parts]
    return [p for p in cleaned if any(t != CLAUSE for t in p)]


def _unsupported(tokens: list[str]) -> None:
    pairs = [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]
    for w in [*pairs, *tokens]:
        base = lemma(w, UNSUPPORTED)
        if base in UNSUPPORTED:
            raise NotExpressible(
                UNSUPPORTED[base] + ", and the offline author has no reward for it"
            )


def read(prompt: str) -> Parsed:
    """The steps a prompt asks for; NotExpressible naming what stops it."""
    tokens = normalize(prompt)
    if not tokens:
        raise NotExpressible("the prompt has no words")
    _unsupported(tokens)
    clauses = [read_clause(seg) for seg in _segments(tokens)]
    unknown = tuple(dict.fromkeys(w for c in clauses for w in c.unknown))
    steps = _assemble(clauses)
    if not steps:
        said = f"; it does not know '{' '.join(unknown)}'" if unknown else ""
        negated = [w for c in clauses for w in c.unmeasured if w.split()[0] in NEGATORS]
        if negated:
            said += f"; it only says what not to do ('{', '.join(negated)}')"
        raise NotExpressible(
            "it names no behaviour the offline author knows (walk/run/hop/swim, stand, lie down, "
            "sit, squat, spin, turn, jump, flip, balance, reach, or a pose of the head, arms, "
            f"knees or feet){said}"
        )
    if len(steps) > MAX_STEPS:
        raise NotExpressible(
            f"it asks for {len(steps)} steps in a row; a reward sequences at most {MAX_STEPS} "
            "phases"
        )
    # A word no table knows is listed, never dropped: the reading says what it did not read.
    unmeasured = tuple(
        dict.fromkeys(
            [w for c in clauses for w in c.unmeasured] + [f"'{w}' (not read)" for w in unknown]
        )
    )
    unused = tuple(dict.fromkeys(w for c in clauses for w in c.unused))
    notes = tuple(dict.fromkeys(n for c in clauses for n in c.notes))
    return Parsed(tuple(steps), unmeasured, unused, notes)


def _assemble(clauses: list[Clause]) -> list[Step]:
    """Steps from clauses: a clause that names no behaviour qualifies the step before it ("...,
    then hold still"), or repeats the steps so far ("..., twice", "and repeat")."""
    steps: list[Step] = []
    for clause in clauses:
        first = clause.steps[0] if clause.steps else None
        if (
            first is not None
            and len(clause.steps) == 1
            and steps
            and steps[-1].core == first.core
            and first.core in _HELD
        ):
            # "reach the target, then hold the fingertip still on it": the same held behaviour
            # again only adds what qualifies it.
            last = steps[-1]
            steps[-1] = replace(
                last,
                qualifiers=last.qualifiers | first.qualifiers,
                poses=last.poses + tuple(p for p in first.poses if p not in last.poses),
            )
            continue
        if clause.steps:
            steps.extend(clause.steps)
            continue
        if clause.count or clause.repeat:
            if not steps:
                raise NotExpressible("it says how often, but not what to repeat")
            times = clause.count or max(1, MAX_STEPS // len(steps))
            steps = steps * times
            continue
        if not steps:
            # A prompt that starts with only qualifiers ("stay still"): being still is the
            # behaviour.
            if clause.qualifiers & {"still", "in_place"} or clause.poses:
                steps.append(clause.as_step())
            continue
        last = steps[-1]
        if last.core not in STATIC and (clause.poses or "still" in clause.qualifiers):
            # "walk forward, then raise its arms": a pose or a halt after moving is a step.
            steps.append(clause.as_step())
            continue
        steps[-1] = replace(
            last,
            qualifiers=last.qualifiers | clause.qualifiers,
            poses=last.poses + tuple(p for p in clause.poses if p not in last.poses),
        )
    return steps
