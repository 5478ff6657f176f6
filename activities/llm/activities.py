"""LLM-pool activities: each is at most one LLM call (none for the offline author).

elicit_criteria -> author_reward (x K candidates) and author_judge -> review_reward -> fix_code
(after a failed validation) -> revise_reward (one call per activity; between calls the workflow
runs the tools the reviser asked for). The video judge and the synthesizer are in
judging_activities.py. Generated code goes to S3 and the workflow gets
keys, short text and the call's accounting back. Sync activities: the LLM worker runs them in
its thread pool, so a slow provider or boto3 blocks only that thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from temporalio.exceptions import ApplicationError

from activities import lessons
from activities.artifacts import ArtifactStore
from activities.evidence import metrics_rows
from activities.llm.agents import criteria as criteria_agent
from activities.llm.agents import dialogue, fixer, judge, reward
from activities.llm.agents.answers import within_cost
from activities.llm.judging_activities import JUDGING_LLM_ACTIVITIES
from activities.llm.offline import OfflineAuthor
from activities.llm.offline.rendering.render import RenderedReward
from activities.llm.provider import is_offline, llm_only, model_label
from activities.logs import activity_logger
from workflows.contracts import keys
from workflows.contracts.activities import (
    AUTHOR_JUDGE,
    AUTHOR_REWARD,
    ELICIT_CRITERIA,
    FIX_CODE,
    REVIEW_REWARD,
    REVISE_REWARD,
    implements,
)
from workflows.contracts.judging import JudgeCode
from workflows.contracts.llm import (
    AuthorRequest,
    AuthorResult,
    ElicitRequest,
    ElicitResult,
    FixRequest,
    FixResult,
    JudgeAuthorRequest,
    ReviewRequest,
    ReviewResult,
    ReviseRequest,
    ReviseResult,
)
from workflows.contracts.session import IterationRecord
from workflows.contracts.training import RewardArtifact


def _template_artifact(key: str, r: RenderedReward) -> RewardArtifact:
    return RewardArtifact(
        key=key,
        latex=r.latex,
        terms=r.terms,
        summary=r.summary,
        template=r.template,
        params=r.params,
    )


def _llm_artifact(key: str, code: reward.RewardCode) -> RewardArtifact:
    return RewardArtifact(key=key, latex=code.latex, terms=code.terms, summary=code.summary)


@implements(ELICIT_CRITERIA)
@within_cost
def elicit_criteria(req: ElicitRequest) -> ElicitResult:
    """The criteria the judge will score, from the model or (offline) from the matched template."""
    log = activity_logger(env_id=req.env_id, model=req.llm_model)
    if is_offline(req.llm_model):
        criteria = OfflineAuthor().author(req.prompt, req.env_id).criteria
        return ElicitResult(criteria=criteria, model_label=model_label(req.llm_model))
    store = ArtifactStore()
    lesson = lessons.load(store, req.env_id, req.prompt)
    criteria, call = criteria_agent.elicit(
        req.prompt,
        req.env_id,
        req.llm_model,
        budget=(req.timesteps, req.algo, req.max_iterations),
        lessons=lessons.text_for_authors(lesson, store) if lesson else "",
    )
    log.info("criteria elicited", criteria=[c.name for c in criteria])
    return ElicitResult(criteria=criteria, model_label=model_label(req.llm_model), usage=call)


@implements(AUTHOR_REWARD)
@within_cost
def author_reward(req: AuthorRequest) -> AuthorResult:
    """One reward candidate to S3: from the model, or rendered from a template offline."""
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    store = ArtifactStore()
    key = keys.reward_key(req.session_id, req.iteration, req.candidate)
    lesson = lessons.load(store, req.env_id, req.prompt)
    if is_offline(req.llm_model):
        # IntentNotSupported when no template fits.
        authored = OfflineAuthor().author(req.prompt, req.env_id, lesson, req.candidate)
        store.put_text(key, authored.reward.code)
        log.info(
            "reward authored", template=authored.reward.template, key=key, lesson=authored.lesson
        )
        return AuthorResult(
            reward=_template_artifact(key, authored.reward),
            criteria=authored.criteria,
            model_label=model_label(req.llm_model),
            timesteps=authored.timesteps,
            unmeasured=list(authored.unmeasured),
        )
    code, call = reward.author(
        req.prompt,
        req.env_id,
        req.criteria,
        req.llm_model,
        req.candidate,
        req.candidates,
        lessons.text_for_authors(lesson, store) if lesson else "",
    )
    store.put_text(key, code.code)
    log.info("reward authored", candidate=req.candidate, terms=code.terms, key=key)
    return AuthorResult(
        reward=_llm_artifact(key, code),
        criteria=req.criteria,
        model_label=model_label(req.llm_model),
        usage=call,
    )


@implements(AUTHOR_JUDGE)
@within_cost
def author_judge(req: JudgeAuthorRequest) -> JudgeCode:
    """Judge code for the session's criteria, to S3: the model's, or without one the offline
    author's (for criteria no built-in metric measures)."""
    log = activity_logger(env_id=req.env_id, model=req.llm_model)
    if is_offline(req.llm_model):
        authored = OfflineAuthor().author(req.prompt, req.env_id)
        if authored.judge is None:
            raise ApplicationError(
                "the offline author writes no judge code for this intent", non_retryable=True
            )
        key = ArtifactStore().put_text(keys.judge_key(req.session_id), authored.judge)
        log.info("offline judge written", key=key)
        return JudgeCode(key=key, summary="the offline author's judge code")
    llm_only("author_judge", req.llm_model)
    store = ArtifactStore()
    lesson = lessons.load(store, req.env_id, req.prompt)
    code, summary, call = judge.author_judge(
        req.prompt,
        req.env_id,
        req.criteria,
        req.llm_model,
        lessons.text_for_authors(lesson, store) if lesson else "",
    )
    key = store.put_text(keys.judge_key(req.session_id), code)
    log.info("judge authored", key=key)
    return JudgeCode(key=key, summary=summary, usage=call)


@implements(REVIEW_REWARD)
@within_cost
def review_reward(req: ReviewRequest) -> ReviewResult:
    """The reviewer's look at a reward: the same artifact when it passes, else a corrected one
    under a .reviewed key."""
    llm_only("review_reward", req.llm_model)
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    store = ArtifactStore()
    code = store.get_text(req.reward.key)
    verdict, call = reward.review(req.prompt, req.env_id, req.criteria, code, req.llm_model)
    if verdict.corrected is None:
        log.info("reward reviewed", lgtm=True, notes=verdict.notes)
        return ReviewResult(lgtm=True, notes=verdict.notes, reward=req.reward, usage=call)
    key = keys.reward_key(req.session_id, req.iteration, req.candidate, "reviewed")
    store.put_text(key, verdict.corrected.code)
    corrected = _llm_artifact(key, verdict.corrected)
    if not corrected.terms:
        corrected = corrected.model_copy(update={"terms": req.reward.terms})
    log.info("reward reviewed", lgtm=False, notes=verdict.notes, key=key)
    return ReviewResult(lgtm=False, notes=verdict.notes, reward=corrected, usage=call)


@implements(FIX_CODE)
@within_cost
def fix_code(req: FixRequest) -> FixResult:
    """Reward or judge code rewritten after it failed validation, under a .fix<k> key next to the
    original."""
    llm_only("fix_code", req.llm_model)
    log = activity_logger(req.iteration, env_id=req.env_id, kind=req.kind, fix_attempt=req.attempt)
    store = ArtifactStore()
    code = store.get_text(req.code_key)
    fixed, call = fixer.fix(
        req.kind,
        req.prompt,
        req.env_id,
        req.criteria,
        code,
        req.error,
        req.attempt,
        req.llm_model,
        after_validation=req.after_validation,
    )
    # A later failure's fixes are named apart from validation's (fix1 may be the code in use).
    version = f"fix{req.attempt}" if not req.series else f"fault{req.series}_fix{req.attempt}"
    key = (
        keys.reward_key(req.session_id, req.iteration, req.candidate, version)
        if req.kind == "reward"
        else keys.judge_key(req.session_id, version)
    )
    store.put_text(key, fixed.code)
    log.info("code fixed", key=key, error=req.error)
    return FixResult(
        key=key, latex=fixed.latex, terms=fixed.terms, summary=fixed.summary, usage=call
    )


@implements(REVISE_REWARD)
@within_cost
def revise_reward(req: ReviseRequest) -> ReviseResult:
    """One call of the reviser. With a model it may end in tool calls for the workflow to run
    (not done); the call after the last tool round must submit."""
    if is_offline(req.llm_model):
        return _revise_offline(req)
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    store = ArtifactStore()
    folder = keys.revision_folder(req.session_id, req.iteration, req.candidate)
    history_key = keys.history_key(folder)

    def opening() -> str:
        # The history goes to S3 once: the tools read it, and so does the submitting call.
        history = [r.model_dump(mode="json") for r in req.history]
        store.put_text(history_key, json.dumps(history, indent=1))
        lesson = lessons.load(store, req.env_id, req.prompt)
        text = lessons.text_for_authors(lesson, store) if lesson else ""
        return reward.revision_opening(
            req, store.get_text(req.reward.key), text, metrics_rows(store, req.train.run_prefix)
        )

    turn, transcript_key = dialogue.next_turn(
        store, req, folder, opening, partial(reward.revise_turn, req.llm_model)
    )
    if transcript_key is not None:
        log.info("reviser looks up", calls=[c.label() for c in turn.tool_calls])
        return ReviseResult(
            done=False,
            tool_calls=turn.tool_calls,
            transcript_key=transcript_key,
            history_key=history_key,
            usage=turn.call,
        )
    # Later calls do not carry the history (it would grow the workflow history): S3 has it.
    known = req.history or [
        IterationRecord.model_validate(r) for r in json.loads(store.get_text(history_key))
    ]
    iterations = [r.iteration for r in known] or [req.iteration - 1]
    revised = reward.revision_from(turn.arguments, iterations, req.algo)
    key = keys.reward_key(req.session_id, req.iteration, req.candidate)
    store.put_text(key, revised.reward.code)
    timesteps = min(revised.timesteps or req.timesteps, req.timesteps_cap)
    changes = revised.changes or revised.diagnosis or "revised the reward"
    log.info(
        "reward revised",
        diagnosis=revised.diagnosis,
        changes=changes,
        base=revised.base_iteration,
        config=revised.config,
        key=key,
    )
    return ReviseResult(
        reward=_llm_artifact(key, revised.reward),
        timesteps=timesteps,
        changes=changes[:600],
        diagnosis=revised.diagnosis,
        base_iteration=revised.base_iteration or req.iteration - 1,
        config=revised.config,
        usage=turn.call,
    )


def _revise_offline(req: ReviseRequest) -> ReviseResult:
    """Templates re-rendered with new parameters; from the best earlier iteration when the
    last one did worse than it."""
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    base, rebased = req.iteration - 1, ""
    if req.best is not None and req.best.judgment.score > req.judgment.score:
        rebased = (
            f"Rebased on iteration {req.best.iteration} (score {req.best.judgment.score:.2f}; "
            f"the last scored {req.judgment.score:.2f}). "
        )
        base = req.best.iteration
        req = req.model_copy(
            update={
                "reward": req.best.reward,
                "judgment": req.best.judgment,
                "train": req.best.train,
            }
        )
    lesson = lessons.load(ArtifactStore(), req.env_id, req.prompt)
    try:
        revision = OfflineAuthor().revise(req, lesson)
    except ValueError as exc:
        raise ApplicationError(str(exc), type="ReviseNotSupported", non_retryable=True) from None
    key = keys.reward_key(req.session_id, req.iteration, req.candidate)
    ArtifactStore().put_text(key, revision.reward.code)
    log.info("reward revised", params=revision.reward.params, changes=revision.changes, base=base)
    changes = rebased + revision.changes
    if req.feedback:
        # Templates have no way to read free text: say so instead of pretending.
        changes += " (your feedback was noted; the offline author cannot act on free text)"
    return ReviseResult(
        reward=_template_artifact(key, revision.reward),
        timesteps=revision.timesteps,
        changes=changes,
        base_iteration=base,
    )


# The LLM side of judging lives in judging_activities.py; one list registers both on the LLM pool.
LLM_ACTIVITIES: list[Callable[..., Any]] = [
    elicit_criteria,
    author_reward,
    author_judge,
    review_reward,
    fix_code,
    revise_reward,
    *JUDGING_LLM_ACTIVITIES,
]
