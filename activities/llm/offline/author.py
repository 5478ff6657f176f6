"""The offline author: intent -> template reward + criteria, deterministic and without network."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from activities.lessons import Entry, Lesson
from activities.llm.offline.behaviours.matcher import Match, match_intent
from activities.llm.offline.rendering.composed import (
    TEMPLATE,
    added_names,
    composition_for,
    judge_code,
    render_composed,
)
from activities.llm.offline.rendering.render import RenderedReward, render_reward
from activities.llm.offline.reviser import Revision, revise
from workflows.contracts.context import OFFLINE_LABEL
from workflows.contracts.judging import Criterion
from workflows.contracts.llm import ReviseRequest


@dataclass(frozen=True)
class Authored:
    """What the offline author produced: the rendered reward, its criteria and the match behind
    them."""

    reward: RenderedReward
    criteria: list[Criterion]
    match: Match
    timesteps: int | None = None  # the budget a lesson's passing session trained with
    lesson: str | None = None  # the session whose lesson the weights came from
    # What the prompt asks for that no criterion measures ("gracefully", "with a relaxed
    # stride"): a pass expresses the behaviour, not these. Shown as "partly expressed".
    unmeasured: list[str] = field(default_factory=list)
    # Judge code (judge_fn) where a criterion needs more than the built-in metrics (a pose, a
    # count, a flip's turn, a phase); None: the built-in code judge measures every criterion.
    judge: str | None = None


def _from(entry: Entry | None) -> str | None:
    """The comment that says the reward starts from a lesson (None: it does not)."""
    if entry is None:
        return None
    return (
        f"Started from the lesson of session {entry.session_id}: it passed at iteration "
        f"{entry.best_iteration} (score {entry.best_score:.2f}) with these weights and "
        f"{entry.timesteps:,} steps"
    )


# Factor on the template's control-cost weight for candidate k (cycled): the first candidate
# is the template's own choice, the others spend control more and less freely.
CANDIDATE_CTRL = (1.0, 0.5, 2.0, 0.25, 4.0)


class OfflineAuthor:
    """Writes reward code the way an LLM author will, from a small library of templates."""

    label = OFFLINE_LABEL

    def author(
        self, prompt: str, env_id: str, lesson: Lesson | None = None, candidate: int = 0
    ) -> Authored:
        """Raises ApplicationError(type='IntentNotSupported') for intents no template fits.
        With a lesson whose best passing session used the same template, its weights are the
        starting point (and its budget is returned as `timesteps`). Candidate k > 0 of a
        template reward weighs the control cost differently (`CANDIDATE_CTRL`), so that the
        candidates of one iteration are a small search rather than copies."""
        match = match_intent(prompt, env_id)
        learnt = lesson.best_pass(match.template) if lesson else None
        params = match.params
        if learnt is not None and set(match.params) <= set(learnt.params):
            params = {**match.params, **learnt.params}
        else:
            learnt = None
        factor = CANDIDATE_CTRL[candidate % len(CANDIDATE_CTRL)]
        if factor != 1.0 and "ctrl_weight" in params and match.template != TEMPLATE:
            params = {**params, "ctrl_weight": round(params["ctrl_weight"] * factor, 6)}
        judge = None
        if match.template == TEMPLATE:
            comp = composition_for(prompt, env_id, params if learnt else None)
            added = added_names(params) if learnt else ()
            reward = render_composed(comp, env_id, prompt, _from(learnt), added=added)
            judge = judge_code(comp, env_id, prompt)
        else:
            notes = match.notes
            if match.unmeasured:
                notes += (f"not measured: {', '.join(match.unmeasured)}",)
            reward = render_reward(
                match.template, env_id, params, prompt, notes=notes, revision=_from(learnt)
            )
        return Authored(
            reward=reward,
            criteria=match.criteria,
            match=match,
            timesteps=learnt.timesteps if learnt else None,
            lesson=learnt.session_id if learnt else None,
            unmeasured=list(match.unmeasured),
            judge=judge,
        )

    def revise(self, req: ReviseRequest, lesson: Lesson | None = None) -> Revision:
        """Re-render the last template reward with parameters adjusted to the evidence; where a
        lesson's passing session trained longer, grow the budget to what it used."""
        revision = revise(req)
        entry = lesson.best_pass() if lesson else None
        if entry is None or req.judgment.passed:
            return revision
        steps = min(entry.timesteps, req.timesteps_cap)
        if steps <= revision.timesteps:
            return revision
        changes = (
            f"{revision.changes} The lesson of session {entry.session_id} passed with "
            f"{entry.timesteps:,} steps per run: raised the budget to {steps:,}."
        )
        return replace(revision, timesteps=steps, changes=changes)
