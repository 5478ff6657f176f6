"""Poses named by body part: "arms out to the sides", "one knee raised", "rear legs off the
ground", "head lowered", "a wide stance".

Whole phrases come from lexicon.POSE_PHRASES; otherwise a body-part word and the state words
near it in the same clause ("with its arms stretched out wide") decide the pose. A body part
with no state the library measures is listed as not measured, naming the words.
"""

from __future__ import annotations

from activities.llm.offline.words.body_lexicon import (
    BODY_PARTS,
    LEG_SIDES,
    POSE_GROUPS,
    POSE_STATES,
    POSE_VERBS,
)
from activities.llm.offline.words.lexicon import (
    CORE_EXTRAS,
    CORE_VERBS,
    DIRECTIONS,
    SPEED_WORDS,
    STYLE,
    words,
)
from activities.llm.offline.words.tokens import CLAUSE, lemma

# Words that only join a body part to its state ("arms out to the sides").
_JOINERS = words(
    "to the its of off ground floor in air at from both his her their held with keeping keep kept "
    "a an"
)
_STOPS = frozenset({CLAUSE, "and", "while", "whilst", "then"})
WINDOW = 4

# (group, state) -> pose; legs also read which legs ("rear", "front", "one").
_RULES: dict[tuple[str, str], str] = {
    ("arms", "out"): "arms_out",
    ("arms", "up"): "arms_up",
    ("arms", "down"): "arms_down",
    ("head", "down"): "head_down",
    ("head", "up"): "head_up",
    ("head", "straight"): "head_up",
    ("knee", "up"): "knee_up",
    ("knees", "up"): "high_knees",
    ("legs", "out"): "wide_stance",
    ("legs", "together"): "narrow_stance",
    ("stance", "out"): "wide_stance",
    ("stance", "together"): "narrow_stance",
    ("torso", "straight"): "upright",
    ("torso", "up"): "upright",
    ("torso", "down"): "torso_low",
    ("torso", "tall"): "torso_tall",
    ("torso", "level"): "level",
    ("torso", "horizontal"): "horizontal",
    ("arms", "horizontal"): "arms_out",
    ("arms", "level"): "arms_out",
}
_LEG_RULES: dict[str, str] = {"rear": "rear_feet_up", "front": "front_feet_up", "one": "one_foot"}
# "the front left leg lifted": one of four legs by its end and side.
_ENDS = {"front": "front", "rear": "back"}


def _stop(tokens: list[str], j: int, step: int) -> bool:
    """Where a part's words end; "and" between two states does not ("low and flat")."""
    if tokens[j] != "and":
        return tokens[j] in _STOPS
    k = j + step
    return not (0 <= k < len(tokens) and tokens[k] in POSE_STATES)


def _window(tokens: list[str], taken: list[bool], i: int) -> list[int]:
    out: list[int] = []
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(tokens) and abs(j - i) <= WINDOW and not _stop(tokens, j, step):
            if not taken[j]:
                out.append(j)
            j += step
    return sorted(out)


_KNOWN = frozenset().union(*CORE_EXTRAS.values()) | frozenset(DIRECTIONS) | frozenset(SPEED_WORDS)


# "arms extended forward": held out in front, which no pose measures (arms_out is sideways).
_AHEAD = frozenset({"forward", "forwards", "ahead", "front"})


def _describes(tokens: list[str], j: int) -> bool:
    """Whether tokens[j] still describes the part: not a manner word, except an adverb before
    a word that does ("knees slightly bent")."""
    if not _manner_word(tokens[j]):
        return True
    nxt = tokens[j + 1] if j + 1 < len(tokens) else ""
    adverb = tokens[j].endswith("ly") and len(tokens[j]) > 4
    return adverb and bool(nxt) and nxt not in _STOPS and lemma(nxt, POSE_VERBS) in POSE_VERBS


def _manner_word(tok: str) -> bool:
    """A word that says something else than the part's state: an adverb or style word ("the
    arm gracefully"), or a word another table reads ("the arm onto the goal")."""
    return (
        (tok.endswith("ly") and len(tok) > 4)
        or tok in STYLE
        or tok in POSE_VERBS
        or tok in _KNOWN
        or tok in ("onto", "into", "toward", "towards", "at", "from", "across")
        or lemma(tok, CORE_VERBS) in CORE_VERBS
    )


# Body-part groups as poses name them ("knees" and "stance" pose as "knee" and "legs").
_SAME = {"knees": "knee", "stance": "legs"}


def read_poses(
    tokens: list[str], taken: list[bool], found: list[str]
) -> tuple[list[str], list[str]]:
    """The poses the clause's remaining body-part words name, and the phrases naming a part in
    a state no measure reads ("arms relaxed": listed as not measured, never refused); their
    words marked taken. A part whose pose a phrase of the clause already gave (`found`) is read
    as part of it."""
    poses: list[str] = []
    unread: list[str] = []
    named = {POSE_GROUPS[p] for p in found if p in POSE_GROUPS}
    for i, tok in enumerate(tokens):
        group = BODY_PARTS.get(tok)
        if group is None or taken[i]:
            continue
        near = _window(tokens, taken, i)
        states = {POSE_STATES[tokens[j]]: j for j in near if tokens[j] in POSE_STATES}
        pose = None
        used = [i]
        if group == "legs":
            sides = {LEG_SIDES[tokens[j]]: j for j in near if tokens[j] in LEG_SIDES}
            lifted = {s: j for s, j in states.items() if s in ("up", "off")}
            end = next((e for e in _ENDS if e in sides), None)
            way = next((w for w in ("left", "right") if w in sides), None)
            if lifted and end and way:
                pose = f"{_ENDS[end]}_{way}_foot_up"
                used += [sides[end], sides[way], *lifted.values()]
            elif "three" in sides and "up" not in states and "off" not in states:
                pose = "one_foot"  # "on three legs": one of four lifted
                used.append(sides["three"])
            for side, rule in _LEG_RULES.items():
                if pose is not None:
                    break
                if side in sides and lifted:
                    pose = rule
                    used += [sides[side], *lifted.values()]
                    break
        also: list[str] = []  # "the torso low and flat": a part in two states
        ahead = any(tokens[j] in _AHEAD for j in near if i < j <= i + 2)
        if pose is None and not (group == "arms" and ahead):
            for state, j in states.items():
                ruled = _RULES.get((group, state))
                if ruled is None:
                    continue
                used.append(j)
                if pose is None:
                    pose = ruled
                elif ruled != pose:
                    also.append(ruled)
        if pose is None and _SAME.get(group, group) in named:
            # "the torso kept low, close to the ground": the phrase gave this part's pose; its
            # own state words say the same.
            taken[i] = True
            for j in near:
                if _RULES.get((group, POSE_STATES.get(tokens[j], ""))) is not None:
                    taken[j] = True
            continue
        if pose is None:
            # The part and the words after it that no table reads ("arms crossed", "hands on
            # its hips"), or the one before it ("crossed arms").
            span = [i]
            j = i + 1
            while (
                j < len(tokens)
                and j - i <= 3
                and not taken[j]
                and tokens[j] not in _STOPS
                and tokens[j] != "with"
                and tokens[j] not in BODY_PARTS
                and tokens[j] not in LEG_SIDES
                and (
                    tokens[j] in POSE_STATES
                    or _describes(tokens, j)
                    or (group == "arms" and tokens[j] in _AHEAD)
                )
            ):
                span.append(j)
                j += 1
            while len(span) > 1 and tokens[span[-1]] in _JOINERS:
                span.pop()
            if (
                len(span) == 1
                and i > 0
                and not taken[i - 1]
                and tokens[i - 1] not in _JOINERS
                and (tokens[i - 1] in POSE_STATES or not _manner_word(tokens[i - 1]))
            ):
                span.insert(0, i - 1)
            if len(span) == 1:
                taken[i] = True  # a part named in no state ("move the arm"): nothing to read
                continue
            unread.append(
                f"{' '.join(tokens[j] for j in span)} (no measure of the {group} reads this)"
            )
            for j in span:
                taken[j] = True
            continue
        lo, hi = min(used), max(used)
        while lo > 0 and not taken[lo - 1] and tokens[lo - 1] in _JOINERS:
            lo -= 1  # "with both hands raised": the words before the part are the pose's too
        for j in range(lo, hi + 1):
            if j in used or tokens[j] in _JOINERS or tokens[j] in POSE_STATES:
                taken[j] = True
        for p in (pose, *also):
            if p not in poses:
                poses.append(p)
    return poses, unread
