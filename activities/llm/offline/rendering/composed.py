"""Composed rewards as code, and their revision.

The code imports the behaviour library (`import primitives as P`) and keeps one weight per term
in `WEIGHTS`: those weights are the reward's parameters (template "composed"), the structure is
re-read from the prompt, so a revision changes numbers and never the meaning.

Revision reads the judge's per-criterion scores and the per-term means from training and changes
what failed, one change per iteration:
  1. a cost that outweighs the behaviour's terms is halved;
  2. the worst-scoring criterion gets the weights of the terms that serve it raised by half; a
     survival criterion raises the posture term (upright), not the constant survival bonus;
  3. the survival bonus is then held at or below ALIVE_SHARE of the behaviour's weights, so a
     policy that stands still is never paid more than one that does the behaviour.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import replace

from activities.llm.offline.behaviours.assemble import compose
from activities.llm.offline.behaviours.compose import (
    ALIVE_SHARE,
    BONUS,
    PENALTY,
    PROGRESS,
    Composition,
)
from activities.llm.offline.reading.reader import read
from activities.llm.offline.rendering.judge import render_judge
from activities.llm.offline.rendering.render import RenderedReward, _read_parts, num
from workflows.contracts.llm import ReviseRequest
from workflows.verdict import is_met

TEMPLATE = "composed"
DOMINANCE = 0.5  # a cost dominates above this share of the behaviour terms' mean per step
GROWTH = 1.5
MAX_WEIGHT = 100.0


# A revision may add a qualifier the prompt did not say (a template reward that kept falling is
# recomposed "without falling"); it is kept among the params as `q_<qualifier>` = 1.
ADDED = "q_"


def composition_for(
    prompt: str, env_id: str, params: dict[str, float] | None = None
) -> Composition:
    """The prompt's composition (with the qualifiers a revision added), with a revision's
    weights where given."""
    parsed = read(prompt)
    added = frozenset(added_names(params or {}))
    if added:
        steps = tuple(replace(s, qualifiers=s.qualifiers | added) for s in parsed.steps)
        parsed = replace(parsed, steps=steps)
    found = compose(parsed, env_id)
    return found.with_weights(params) if params else found


def judge_code(comp: Composition, env_id: str, prompt: str) -> str | None:
    """Judge code for a composition the built-in judge cannot measure (None: it can)."""
    if not comp.needs_judge:
        return None
    return render_judge(
        env_id, prompt, list(comp.criteria), comp.measures, comp.windows, comp.phase_times
    )


def render_composed(
    comp: Composition,
    env_id: str,
    prompt: str,
    revision: str | None = None,
    added: tuple[str, ...] = (),
) -> RenderedReward:
    """Reward code for a composition (the terms with a non-zero weight)."""
    terms = [t for t in comp.terms if t.weight != 0.0]
    shown = "".join(c for c in " ".join(prompt.split()) if c.isprintable())[:200]
    shown = shown.replace('"', "'")
    latex, summary = [], []
    for i, t in enumerate(terms):
        sign = "-" if t.role == PENALTY else ("+" if i else "")
        symbol = "" if t.role == BONUS else f"\\,{t.latex}"  # a bonus is a constant
        latex.append(f"{sign} {num(t.weight)}{symbol}".strip())
        if t.role == PENALTY:
            summary.append(f"minus a control cost (weight {num(t.weight)})")
        else:
            summary.append(f"{t.meaning} (weight {num(t.weight)})")
    lines = [
        f'# Reward for "{shown}" on {env_id}.',
        "# Composed by the policyforge offline author from the behaviour library (primitives):",
        "# each term is a bounded primitive in [0, 1] (the control cost aside) times its weight.",
    ]
    if revision:
        note = "".join(c for c in " ".join(revision.split()) if c.isprintable())
        lines += ["#", *("# " + part for part in textwrap.wrap(note, 95))]
    phased = "phases" in comp.shaping
    lines += [
        "import numpy as np",
        "import primitives as P",
        "",
        f'ENV = "{env_id}"',
        "WEIGHTS = {" + ", ".join(f'"{t.name}": {num(t.weight)}' for t in terms) + "}",
        f"TERMS = {[t.name for t in terms]!r}",
        f"LATEX_PARTS = {latex!r}",
        f"SUMMARY_PARTS = {summary!r}",
    ]
    if comp.shaping:
        # Phases are advanced by the trusted side (info["phase"]) and shown to the policy.
        lines.append(f"SHAPING = {comp.shaping!r}")
    lines += [
        "",
        "",
        "class ComposedReward(RewardFunction):",
        f'    """{comp.core.capitalize()}, composed from primitives."""',
        "",
        "    def compute(self, obs, action, next_obs, info):",
        *(['        phase = int(info["phase"])'] if phased else []),
        "        values = {",
        *(f'            "{t.name}": {"-" if t.role == PENALTY else ""}{t.call},' for t in terms),
        "        }",
        "        terms = {name: WEIGHTS[name] * float(values[name]) for name in TERMS}",
        "        return float(sum(terms.values())), terms",
        "",
        "    @property",
        "    def latex(self):",
        '        return "r_t = " + " ".join(LATEX_PARTS)',
        "",
        "    @property",
        "    def terms(self):",
        "        return list(TERMS)",
    ]
    code = "\n".join(lines) + "\n"
    latex_parts, summary_parts = _read_parts(code)
    text = "Reward: " + ", ".join(summary_parts) + "."
    if phased:
        names = " -> ".join(p["name"] for p in comp.shaping["phases"])
        text += f" Phases: {names}."
    if comp.notes:
        text += " " + " ".join(n[0].upper() + n[1:] + "." for n in comp.notes)
    if comp.unmeasured:
        text += f" Not measured: {', '.join(comp.unmeasured)}."
    return RenderedReward(
        code=code,
        latex="r_t = " + " ".join(latex_parts),
        terms=[t.name for t in terms],
        summary=text,
        template=TEMPLATE,
        params={
            **{f"{t.name}_weight": t.weight for t in comp.terms},
            **{ADDED + q: 1.0 for q in added},
        },
    )


def added_qualifiers(params: dict[str, float]) -> dict[str, float]:
    """Only the `q_` flags of a composed reward's params."""
    return {k: v for k, v in params.items() if k.startswith(ADDED)}


def added_names(params: dict[str, float]) -> tuple[str, ...]:
    """The qualifier names a revision added."""
    return tuple(
        sorted(k.removeprefix(ADDED) for k, v in params.items() if k.startswith(ADDED) and v)
    )


def recompose_without_falls(prompt: str, env_id: str) -> Composition | None:
    """The prompt recomposed with "without falling" (None when no composition expresses it)."""
    try:
        return composition_for(prompt, env_id, {ADDED + "no_fall": 1.0})
    except ValueError:  # NotExpressible
        return None


def _scale(params: dict[str, float], term: str, factor: float) -> str | None:
    key = f"{term}_weight"
    old = params[key]
    new = float(num(min(max(old * factor, 1e-5), MAX_WEIGHT)))
    if math.isclose(new, old):
        return None
    params[key] = new
    return f"{term} {num(old)} -> {num(new)}"


def behaviour_weight(comp: Composition, params: dict[str, float]) -> float:
    """The summed weight of the terms that express the behaviour (not costs, bonuses or phase
    floors)."""
    return sum(
        params[f"{t.name}_weight"] for t in comp.terms if t.role not in (PENALTY, BONUS, PROGRESS)
    )


def constant_dominates(comp: Composition, params: dict[str, float]) -> bool:
    """The reviewer's check: a constant per-step bonus above ALIVE_SHARE of the behaviour."""
    bonus = sum(params[f"{t.name}_weight"] for t in comp.terms if t.role == BONUS)
    return bonus > ALIVE_SHARE * behaviour_weight(comp, params) + 1e-9


def revise_weights(req: ReviseRequest) -> tuple[dict[str, float], str]:
    """The next weights for a composed reward and the sentence that says why."""
    comp = composition_for(req.prompt, req.env_id, added_qualifiers(req.reward.params))
    params = {**comp.weights(), **{k: float(v) for k, v in req.reward.params.items()}}
    means = {t.name: float(req.train.term_means.get(t.name, 0.0)) for t in comp.terms}
    roles = {t.name: t.role for t in comp.terms}
    behaviour = sum(abs(means[n]) for n, r in roles.items() if r not in (PENALTY, BONUS, PROGRESS))
    sentence = ""
    for name in sorted((n for n, r in roles.items() if r == PENALTY), key=lambda n: -abs(means[n])):
        if abs(means[name]) > DOMINANCE * behaviour and means[name] != 0.0:
            change = _scale(params, name, 0.5)
            if change:
                sentence = (
                    f"The {name} cost ({means[name]:.3g}/step) outweighed the behaviour's terms "
                    f"({behaviour:.3g}/step): halved {change}."
                )
                break
    if not sentence:
        # Unmet criteria first (the verdict's own), then the lowest progress: a criterion met
        # with partial credit is not what holds the verdict back.
        failing = sorted(
            (c for c in req.judgment.criteria if c.score < 1.0 or not is_met(c)),
            key=lambda c: (is_met(c), c.score),
        )
        for c in failing:
            serving = [n for n in comp.serves.get(c.name, ()) if n in roles]
            raised = [n for n in serving if roles[n] != BONUS]
            if not raised and "upright" in roles:
                raised = ["upright"]  # survival: better posture, not a bigger constant
            changes = [ch for n in raised if (ch := _scale(params, n, GROWTH))]
            if changes:
                sentence = (
                    f"Criterion {c.name} scored {c.score:.2f} ({c.metric} {c.value:.3g}, "
                    f"target {c.target:.3g}): raised "
                    f"{'; '.join(changes)}."
                )
                break
    cap = round(ALIVE_SHARE * behaviour_weight(comp, params), 4)
    for name, role in roles.items():
        if role == BONUS and params[f"{name}_weight"] > cap:
            old = params[f"{name}_weight"]
            params[f"{name}_weight"] = cap
            sentence += (
                f" Held the constant {name} bonus at {num(cap)} (was {num(old)}): "
                f"{ALIVE_SHARE:.0%} of the behaviour's weights."
            )
    return params, sentence.strip()
