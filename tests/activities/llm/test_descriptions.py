"""Benchmark-style descriptions (issue 41): one to four sentences with filler, hedges and several
qualifiers, read as one intent; the same 90% bar as the paraphrase bank, one-line refusals, and
two rules checked over both banks: a qualifier read is judged or listed as not measured (never
dropped), and a word no table knows never refuses an intent in which a behaviour was found."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.behaviours.layout import PLANAR, layout
from activities.envs.catalog import ENVS, facts
from activities.llm.offline import OfflineAuthor
from activities.llm.offline.behaviours.compose import QUALIFIER_WORDS
from activities.llm.offline.reading.reader import read
from tests.activities.llm.descriptions import BANK
from tests.activities.llm.paraphrases import BANK as PARAPHRASES
from tests.activities.llm.test_paraphrases import PASS_RATE, problems

EXPRESSED = [c for c in BANK if "refuse" not in c[2]]
REFUSED = [c for c in BANK if "refuse" in c[2]]
BOTH = [c for c in BANK + PARAPHRASES if "refuse" not in c[2]]


def _sentences(prompt: str) -> int:
    return len([s for s in re.split(r"[.!?]+(?:\s|$)", prompt) if s.strip()])


def test_the_bank_is_benchmark_style_on_every_env():
    assert len(EXPRESSED) >= 80
    assert len({(e, p) for e, p, _ in BANK}) == len(BANK), "no description twice"
    assert not {p.lower() for _, p, _ in BANK} & {p.lower() for _, p, _ in PARAPHRASES}
    per_env = Counter(e for e, _, _ in EXPRESSED)
    assert set(per_env) == set(ENVS) and min(per_env.values()) >= 6
    assert {e for e, _, _ in REFUSED} == set(ENVS)
    assert all(1 <= _sentences(p) <= 4 for _, p, _ in BANK)
    assert sum(_sentences(p) > 1 for _, p, _ in BANK) >= 30, "several sentences, often"


def test_at_least_90_percent_of_the_descriptions_are_read_as_meant():
    failed = {f"{e}: {p}": why for e, p, w in EXPRESSED if (why := problems((e, p, w)))}
    rate = 1 - len(failed) / len(EXPRESSED)
    print(f"description bank: {len(EXPRESSED) - len(failed)}/{len(EXPRESSED)} ({rate:.1%})")
    assert rate >= PASS_RATE, "\n".join(f"{k}: {'; '.join(v)}" for k, v in failed.items())


@pytest.mark.parametrize(("env", "prompt", "want"), REFUSED, ids=[p for _, p, _ in REFUSED])
def test_each_refusal_says_why_in_one_line(env: str, prompt: str, want: dict[str, Any]):
    with pytest.raises(ApplicationError) as info:
        OfflineAuthor().author(prompt, env)
    assert info.value.type == "IntentNotSupported" and "\n" not in info.value.message
    assert want["refuse"] in info.value.message


# What judges each qualifier: a piece of a criterion's name or metric.
JUDGED_BY: dict[str, tuple[str, ...]] = {
    "still": ("still", "in_place", "rest", "joint_speed", "pole_vertical"),
    "stay": ("still", "height", "upright", "rest", "in_place"),
    "whole_episode": ("alive_fraction", "keeps_balance"),
    "no_fall": ("alive_fraction", "upright", "keeps_balance"),
    "upright": ("upright", "pole_vertical"),
    "in_place": ("in_place", "distance_from_start", "horizontal_speed"),
    "centered": ("center", "cart"),
    "ccw": ("yaw", "spin", "turn", "heading"),
    "cw": ("yaw", "spin", "turn", "heading"),
    "circle": ("yaw", "circle"),
    "straight": ("lateral", "heading", "straight"),
    "no_turn": ("heading", "yaw", "turn"),
    "no_backward": ("goes_back", "backward"),
    "high_knees": ("knee",),
    "from_ground": ("height", "tall", "stand"),
    "arms_out": ("arms_out", "hands_at_shoulders"),
    "knee_up": ("knee",),
}


def _judged(name: str, env: str, criteria: list[str]) -> bool:
    if name == "whole_episode" and not facts(env).terminates:
        return True  # every criterion is measured over the whole episode there
    if name in ("straight", "no_turn") and layout(env).root == PLANAR:
        return True  # a planar body cannot leave its line or turn
    pieces = JUDGED_BY.get(name, (name,))
    return any(p in c for p in pieces for c in criteria)


def _listed(name: str, unmeasured: list[str]) -> bool:
    said = QUALIFIER_WORDS.get(name, name.replace("_", " "))
    return any(said in u or name in u for u in unmeasured)


def test_every_qualifier_read_is_judged_or_listed_as_not_measured():
    dropped = []
    for env, prompt, _ in BOTH:
        try:
            authored = OfflineAuthor().author(prompt, env)
        except ApplicationError:
            continue  # a case the bank says is read differently: the 90% tests report it
        criteria = [f"{c.name}:{c.metric or ''}" for c in authored.criteria]
        for step in read(prompt).steps:
            for name in [*sorted(step.qualifiers), *step.poses]:
                if not (_judged(name, env, criteria) or _listed(name, authored.unmeasured)):
                    dropped.append(f"{env}: {prompt!r}: {name} (criteria {criteria})")
    assert not dropped, "\n".join(dropped)


MADE_UP = ("blorft", "zindle", "quexes")


def _with_made_up_words(prompt: str) -> str:
    """Made-up words where people put words of their own: before the description, as an aside
    after its first comma, and as a sentence of its own at the end."""
    head, comma, tail = prompt.partition(", ")
    aside = f"{head}, {MADE_UP[0]}, {tail}" if comma else f"{prompt.rstrip('.!?')}, {MADE_UP[0]}"
    return f"{MADE_UP[0].title()} {aside.rstrip('.!?')}. {MADE_UP[1].title()} the {MADE_UP[2]}."


def test_no_intent_of_either_bank_is_refused_for_a_word_no_table_knows():
    broken = []
    for env, prompt, _ in BOTH:
        try:
            plain = OfflineAuthor().author(prompt, env)
        except ApplicationError:
            continue
        noisy_prompt = _with_made_up_words(prompt)
        try:
            noisy = OfflineAuthor().author(noisy_prompt, env)
        except ApplicationError as exc:
            broken.append(f"{env}: {noisy_prompt!r} refused: {exc.message}")
            continue
        if [c.name for c in noisy.criteria] != [c.name for c in plain.criteria]:
            broken.append(f"{env}: {noisy_prompt!r} read differently")
        missing = [w for w in MADE_UP if f"'{w}' (not read)" not in noisy.unmeasured]
        if missing:
            broken.append(f"{env}: {noisy_prompt!r} does not list {missing}")
    assert not broken, "\n".join(broken)
