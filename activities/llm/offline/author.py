"""The offline author: intent -> template reward + criteria, deterministic and without network."""

from __future__ import annotations

from dataclasses import dataclass

from activities.llm.offline.composed import TEMPLATE, composition_for, render_composed
from activities.llm.offline.matcher import Match, match_intent
from activities.llm.offline.render import RenderedReward, render_reward
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


class OfflineAuthor:
    """Writes reward code the way an LLM author will, from a small library of templates."""

    label = OFFLINE_LABEL

    def author(self, prompt: str, env_id: str) -> Authored:
        """Raises ApplicationError(type='IntentNotSupported') for intents no template fits."""
        match = match_intent(prompt, env_id)
        if match.template == TEMPLATE:
            reward = render_composed(composition_for(prompt, env_id), env_id, prompt)
        else:
            reward = render_reward(match.template, env_id, match.params, prompt, notes=match.notes)
        return Authored(reward=reward, criteria=match.criteria, match=match)

    def revise(self, req: ReviseRequest) -> Revision:
        """Re-render the last template reward with parameters adjusted to the evidence."""
        return revise(req)
