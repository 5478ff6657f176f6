"""LLM-pool activities: author a reward for an intent, revise it after a judged iteration.

Thin wrappers: the model name picks the author (only the offline author in this build), the reward
code goes to S3 at sessions/<sid>/iter_<n>/reward_fn.py, and the workflow gets the key back.
Sync activities: the LLM worker runs them in its thread pool, boto3 blocks only that thread.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore, iteration_prefix
from activities.llm.offline.render import RenderedReward
from activities.llm.provider import get_author, model_label
from activities.logs import activity_logger
from workflows.models import (
    AuthorRequest,
    AuthorResult,
    ReviseRequest,
    ReviseResult,
    RewardArtifact,
)

REWARD_FILE = "reward_fn.py"


def reward_key(session_id: str, iteration: int) -> str:
    return iteration_prefix(session_id, iteration) + REWARD_FILE


def _artifact(key: str, reward: RenderedReward) -> RewardArtifact:
    return RewardArtifact(
        key=key,
        latex=reward.latex,
        terms=reward.terms,
        summary=reward.summary,
        template=reward.template,
        params=reward.params,
    )


@activity.defn(name="author_reward")
def author_reward(req: AuthorRequest) -> AuthorResult:
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    author = get_author(req.llm_model)  # non-retryable error for models this build lacks
    authored = author.author(req.prompt, req.env_id)  # IntentNotSupported: non-retryable
    key = ArtifactStore().put_text(reward_key(req.session_id, req.iteration), authored.reward.code)
    log.info(
        "reward authored",
        template=authored.reward.template,
        terms=authored.reward.terms,
        criteria=[c.name for c in authored.criteria],
        key=key,
    )
    return AuthorResult(
        reward=_artifact(key, authored.reward),
        criteria=authored.criteria,
        model_label=model_label(req.llm_model),
    )


@activity.defn(name="revise_reward")
def revise_reward(req: ReviseRequest) -> ReviseResult:
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    author = get_author(req.llm_model)
    try:
        revision = author.revise(req)
    except ValueError as exc:
        raise ApplicationError(str(exc), type="ReviseNotSupported", non_retryable=True) from None
    key = ArtifactStore().put_text(reward_key(req.session_id, req.iteration), revision.reward.code)
    log.info(
        "reward revised",
        params=revision.reward.params,
        timesteps=revision.timesteps,
        changes=revision.changes,
        key=key,
    )
    return ReviseResult(
        reward=_artifact(key, revision.reward),
        timesteps=revision.timesteps,
        changes=revision.changes,
    )


LLM_ACTIVITIES = [author_reward, revise_reward]
