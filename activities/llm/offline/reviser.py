"""The offline reviser: one deterministic, explained change to a template reward per iteration.

It reads what training and the judge measured (per-term means, failure tags, criterion scores,
whether returns were still rising) and changes what most plausibly holds the policy back:
  1. a penalty term that outweighs the task terms -> halve its weight;
  2. the policy falls early and the reward has an alive bonus -> raise the bonus by half;
  3. a constant alive bonus dwarfs the task terms -> halve it (the policy is paid to stand still);
  4. otherwise -> raise the task terms' weights by half.
Independently, when training was still improving, the budget grows by half (up to the cap).
One reward change at a time keeps the effect of each revision attributable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from activities.llm.offline.behaviours.library import SPECS, TemplateSpec
from activities.llm.offline.behaviours.matcher import match_intent
from activities.llm.offline.rendering.composed import TEMPLATE as COMPOSED
from activities.llm.offline.rendering.composed import (
    added_names,
    composition_for,
    recompose_without_falls,
    render_composed,
    revise_weights,
)
from activities.llm.offline.rendering.render import RenderedReward, clean_params, num, render_reward
from workflows.contracts.llm import ReviseRequest
from workflows.verdict import unmet

DOMINANCE = 0.5  # a penalty counts as dominant above this fraction of the task terms' magnitude
BONUS_DOMINANCE = 3.0  # an alive bonus counts as dominant above this multiple of the task terms
BUDGET_GROWTH = 1.5
MIN_WEIGHT = 1e-5  # never scale a weight to zero: a zero weight removes the term entirely
MAX_WEIGHT = 1e3


@dataclass(frozen=True)
class Revision:
    """The offline reviser's answer: the re-rendered reward, the next training budget and what
    changed."""

    reward: RenderedReward
    timesteps: int
    changes: str


def _rescale(params: dict[str, float], key: str, factor: float) -> str | None:
    """Scale params[key] in place, clamped: 'key old -> new', or None when clamping leaves it
    unchanged."""
    old = params[key]
    new = float(num(min(max(old * factor, MIN_WEIGHT), MAX_WEIGHT)))
    if math.isclose(new, old):
        return None
    params[key] = new
    return f"{key} {num(old)} -> {num(new)}"


def _term_means(req: ReviseRequest, spec: TemplateSpec) -> dict[str, float]:
    return {t: float(req.train.term_means.get(t, 0.0)) for t in spec.terms}


def _reward_change(req: ReviseRequest, spec: TemplateSpec, params: dict[str, float]) -> str:
    """Apply one change to `params` in place; return the sentence that explains it."""
    means = _term_means(req, spec)
    task = sum(abs(means[t]) for t in spec.task_terms)
    tags = set(req.judgment.failure_tags)

    # Largest penalty first; a penalty whose weight is 0 is not in the reward at all.
    for term in sorted(spec.penalties, key=lambda t: -abs(means[t])):
        key = spec.weight_param(term)
        if not params.get(key):
            continue
        tagged = f"{term}_cost_dominates" in tags
        measured = means[term] != 0.0 and abs(means[term]) > DOMINANCE * task
        change = _rescale(params, key, 0.5) if measured or tagged else None
        if change:
            evidence = (
                f"({means[term]:.3g}/step in training) outweighed the task terms ({task:.3g}/step)"
                if measured
                else "outweighed the task terms in the judged rollout"
            )
            return f"The {term} penalty {evidence}: halved {change}."

    for term in spec.bonuses:
        key = spec.weight_param(term)
        if not params.get(key):
            continue
        if "falls_early" in tags:
            change = _rescale(params, key, 1.5)
            if change:
                return (
                    f"The policy fell early: raised the {term} bonus {change} so staying up "
                    "pays more."
                )
        elif means[term] > BONUS_DOMINANCE * task:
            change = _rescale(params, key, 0.5)
            if change:
                return (
                    f"The constant {term} bonus ({means[term]:.3g}/step) dwarfed the task terms "
                    f"({task:.3g}/step), so standing still paid: halved {change}."
                )

    changed = [ch for t in spec.task_terms if (ch := _rescale(params, spec.weight_param(t), 1.5))]
    if changed:
        failing = [c.name for c in unmet(req.judgment.criteria)]
        why = f"criteria not met ({', '.join(failing)})" if failing else "the rollout did not pass"
        return f"No penalty dominated but {why}: raised the task weight {'; '.join(changed)}."
    return ""


def _notes(prompt: str, env_id: str) -> tuple[str, ...]:
    """The author's reading notes (e.g. how 'natural gait' was read) and what the prompt asks
    that no criterion measures, kept in the summary."""
    try:
        match = match_intent(prompt, env_id)
    except Exception:  # noqa: BLE001 - a reward written for a prompt the matcher rejects
        return ()
    unmeasured = (f"not measured: {', '.join(match.unmeasured)}",) if match.unmeasured else ()
    return match.notes + unmeasured


def _budget(req: ReviseRequest) -> tuple[int, str]:
    """The next budget and the sentence that explains it ("" when returns had settled)."""
    if not req.train.still_improving:
        return req.timesteps, ""
    grown = min(math.ceil(req.timesteps * BUDGET_GROWTH), req.timesteps_cap)
    if grown > req.timesteps:
        return grown, (
            f"Returns were still rising at the end of training: raised the budget "
            f"{req.timesteps:,} -> {grown:,} steps (cap {req.timesteps_cap:,})."
        )
    return req.timesteps, (
        f"Returns were still rising, but the budget is already at its cap "
        f"({req.timesteps_cap:,} steps)."
    )


def _recompose_after_falls(
    req: ReviseRequest, spec: TemplateSpec, params: dict[str, float]
) -> Revision | None:
    """A template reward that fell again although its alive bonus already pays as much as the
    task: more bonus would teach standing still, so the intent is recomposed "without falling"
    (a posture term, a survival bonus held below the behaviour) instead."""
    if "falls_early" not in req.judgment.failure_tags or not spec.bonuses:
        return None
    means = _term_means(req, spec)
    task = sum(abs(means[t]) for t in spec.task_terms)
    bonus = sum(means[t] for t in spec.bonuses)
    if bonus * 1.5 <= task:
        return None  # raising the bonus (rule 2) still leaves the task the larger pay
    comp = recompose_without_falls(req.prompt, req.env_id)
    if comp is None:
        return None
    timesteps, budget = _budget(req)
    change = (
        f"The policy fell early although its alive bonus ({bonus:.3g}/step) already paid "
        f"about as much as the task ({task:.3g}/step): recomposed the reward 'without "
        "falling' from the behaviour library (an upright term, the survival bonus held at a "
        "quarter of the behaviour's weights) instead of raising the bonus."
    )
    changes = " ".join(s for s in (change, budget) if s)
    reward = render_composed(
        comp,
        req.env_id,
        req.prompt,
        f"Revised for iteration {req.iteration}: {changes}",
        added=("no_fall",),
    )
    return Revision(reward=reward, timesteps=timesteps, changes=changes)


def revise(req: ReviseRequest) -> Revision:
    """Adjust a template reward's parameters from the evidence (a dominating term, a fall, or
    missed criteria) and grow the budget while returns still rise."""
    template = req.reward.template
    if template == COMPOSED:
        params, change = revise_weights(req)
        timesteps, budget = _budget(req)
        sentences = [change, budget]
        changes = " ".join(s for s in sentences if s) or "No weight could be changed further."
        comp = composition_for(req.prompt, req.env_id, params)
        revision = f"Revised for iteration {req.iteration}: {changes}"
        added = added_names(params)
        reward = render_composed(comp, req.env_id, req.prompt, revision, added=added)
        return Revision(reward=reward, timesteps=timesteps, changes=changes)
    if template is None or template not in SPECS:
        raise ValueError(
            "the offline reviser can only re-render template rewards; this reward has "
            f"template {template!r}"
        )
    spec = SPECS[template]
    params = clean_params(req.reward.params)
    recomposed = _recompose_after_falls(req, spec, params)
    if recomposed is not None:
        return recomposed
    sentences = [_reward_change(req, spec, params)]

    timesteps, budget = _budget(req)
    sentences.append(budget)
    changes = " ".join(s for s in sentences if s) or "No parameter could be changed further."
    reward = render_reward(
        template,
        req.env_id,
        params,
        req.prompt,
        notes=_notes(req.prompt, req.env_id),
        revision=f"Revised for iteration {req.iteration}: {changes}",
    )
    return Revision(reward=reward, timesteps=timesteps, changes=changes)
