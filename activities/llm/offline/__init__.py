"""The offline author and reviser: reward templates instead of a language model.

Light to import (no gymnasium, no boto3): the CLI calls `match_intent` to check a prompt before it
connects to anything.
"""

from activities.llm.offline.author import Authored, OfflineAuthor
from activities.llm.offline.behaviours.matcher import Match, match_intent
from activities.llm.offline.rendering.render import RenderedReward, render_reward
from activities.llm.offline.reviser import Revision, revise

__all__ = [
    "Authored",
    "Match",
    "OfflineAuthor",
    "RenderedReward",
    "Revision",
    "match_intent",
    "render_reward",
    "revise",
]
