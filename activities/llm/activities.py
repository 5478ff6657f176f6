"""LLM-pool activities: each is at most one LLM call (none for the offline author).

elicit_criteria -> author_reward (x K candidates) and author_judge -> review_reward -> fix_code
(after a failed validation) -> revise_reward. Generated code goes to S3 and the workflow gets
keys, short text and the call's accounting back. Sync activities: the LLM worker runs them in
its thread pool, so a slow provider or boto3 blocks only that thread.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.artifacts import ArtifactStore, iteration_prefix, session_prefix
from activities.llm.agents import criteria as criteria_agent
from activities.llm.agents import fixer, judge, reward, vlm
from activities.llm.offline import OfflineAuthor
from activities.llm.offline.render import RenderedReward
from activities.llm.provider import is_offline, model_label
from activities.logs import activity_logger
from workflows.models import (
    AuthorRequest,
    AuthorResult,
    ElicitRequest,
    ElicitResult,
    FixRequest,
    FixResult,
    JudgeAuthorRequest,
    JudgeCode,
    ReviewRequest,
    ReviewResult,
    ReviseRequest,
    ReviseResult,
    RewardArtifact,
    VisualCriteria,
    VisualCriteriaRequest,
    VisualCriterion,
    VisualJudgment,
    VisualVerdict,
    VlmJudgeRequest,
)

REWARD_FILE = "reward_fn.py"
JUDGE_FILE = "judge_fn.py"


def reward_key(session_id: str, iteration: int, candidate: int = 0, version: str = "") -> str:
    """iter_<n>/reward_fn.py for the first candidate, reward_fn_c<k>.py for the others; a
    version suffix (reviewed, fix2) keeps every rewrite next to the original."""
    stem = (
        "reward_fn" + (f"_c{candidate}" if candidate else "") + (f".{version}" if version else "")
    )
    return iteration_prefix(session_id, iteration) + stem + ".py"


def judge_key(session_id: str, version: str = "") -> str:
    return session_prefix(session_id) + "judge_fn" + (f".{version}" if version else "") + ".py"


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


def _llm_only(name: str, model: str) -> None:
    if is_offline(model):
        raise ApplicationError(
            f"{name} needs a language model; the offline author does not do it",
            type="NotSupportedOffline",
            non_retryable=True,
        )


@activity.defn(name="elicit_criteria")
def elicit_criteria(req: ElicitRequest) -> ElicitResult:
    log = activity_logger(env_id=req.env_id, model=req.llm_model)
    if is_offline(req.llm_model):
        criteria = OfflineAuthor().author(req.prompt, req.env_id).criteria
        return ElicitResult(criteria=criteria, model_label=model_label(req.llm_model))
    criteria, call = criteria_agent.elicit(req.prompt, req.env_id, req.llm_model)
    log.info("criteria elicited", criteria=[c.name for c in criteria])
    return ElicitResult(criteria=criteria, model_label=model_label(req.llm_model), usage=call)


@activity.defn(name="author_reward")
def author_reward(req: AuthorRequest) -> AuthorResult:
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    store = ArtifactStore()
    key = reward_key(req.session_id, req.iteration, req.candidate)
    if is_offline(req.llm_model):
        authored = OfflineAuthor().author(req.prompt, req.env_id)  # IntentNotSupported
        store.put_text(key, authored.reward.code)
        log.info("reward authored", template=authored.reward.template, key=key)
        return AuthorResult(
            reward=_template_artifact(key, authored.reward),
            criteria=authored.criteria,
            model_label=model_label(req.llm_model),
        )
    code, call = reward.author(
        req.prompt, req.env_id, req.criteria, req.llm_model, req.candidate, req.candidates
    )
    store.put_text(key, code.code)
    log.info("reward authored", candidate=req.candidate, terms=code.terms, key=key)
    return AuthorResult(
        reward=_llm_artifact(key, code),
        criteria=req.criteria,
        model_label=model_label(req.llm_model),
        usage=call,
    )


@activity.defn(name="author_judge")
def author_judge(req: JudgeAuthorRequest) -> JudgeCode:
    _llm_only("author_judge", req.llm_model)
    log = activity_logger(env_id=req.env_id, model=req.llm_model)
    code, summary, call = judge.author_judge(req.prompt, req.env_id, req.criteria, req.llm_model)
    key = ArtifactStore().put_text(judge_key(req.session_id), code)
    log.info("judge authored", key=key)
    return JudgeCode(key=key, summary=summary, usage=call)


@activity.defn(name="review_reward")
def review_reward(req: ReviewRequest) -> ReviewResult:
    _llm_only("review_reward", req.llm_model)
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    store = ArtifactStore()
    code = store.get_text(req.reward.key)
    verdict, call = reward.review(req.prompt, req.env_id, req.criteria, code, req.llm_model)
    if verdict.lgtm or verdict.corrected is None:
        log.info("reward reviewed", lgtm=True, notes=verdict.notes)
        return ReviewResult(lgtm=True, notes=verdict.notes, reward=req.reward, usage=call)
    key = reward_key(req.session_id, req.iteration, req.candidate, "reviewed")
    store.put_text(key, verdict.corrected.code)
    corrected = _llm_artifact(key, verdict.corrected)
    if not corrected.terms:
        corrected = corrected.model_copy(update={"terms": req.reward.terms})
    log.info("reward reviewed", lgtm=False, notes=verdict.notes, key=key)
    return ReviewResult(lgtm=False, notes=verdict.notes, reward=corrected, usage=call)


@activity.defn(name="fix_code")
def fix_code(req: FixRequest) -> FixResult:
    _llm_only("fix_code", req.llm_model)
    log = activity_logger(req.iteration, env_id=req.env_id, kind=req.kind, fix_attempt=req.attempt)
    store = ArtifactStore()
    code = store.get_text(req.code_key)
    args, call = fixer.fix(
        req.kind,
        req.prompt,
        req.env_id,
        req.criteria,
        code,
        req.error,
        req.attempt,
        req.llm_model,
    )
    version = f"fix{req.attempt}"
    key = (
        reward_key(req.session_id, req.iteration, req.candidate, version)
        if req.kind == "reward"
        else judge_key(req.session_id, version)
    )
    store.put_text(key, args["code"])
    log.info("code fixed", key=key, error=req.error)
    terms = args.get("terms")
    return FixResult(
        key=key,
        latex=str(args.get("latex") or ""),
        terms=[str(t) for t in terms] if isinstance(terms, list) else [],
        summary=str(args.get("summary") or ""),
        usage=call,
    )


@activity.defn(name="revise_reward")
def revise_reward(req: ReviseRequest) -> ReviseResult:
    log = activity_logger(req.iteration, env_id=req.env_id, model=req.llm_model)
    store = ArtifactStore()
    key = reward_key(req.session_id, req.iteration, req.candidate)
    if is_offline(req.llm_model):
        try:
            revision = OfflineAuthor().revise(req)
        except ValueError as exc:
            raise ApplicationError(
                str(exc), type="ReviseNotSupported", non_retryable=True
            ) from None
        store.put_text(key, revision.reward.code)
        log.info("reward revised", params=revision.reward.params, changes=revision.changes)
        changes = revision.changes
        if req.feedback:
            # Templates have no way to read free text: say so instead of pretending.
            changes += " (your feedback was noted; the offline author cannot act on free text)"
        return ReviseResult(
            reward=_template_artifact(key, revision.reward),
            timesteps=revision.timesteps,
            changes=changes,
        )
    code = store.get_text(req.reward.key)
    revised, call = reward.revise(
        req.prompt,
        req.env_id,
        req.criteria,
        code,
        req.judgment,
        req.train,
        req.timesteps,
        req.timesteps_cap,
        req.llm_model,
        req.feedback,
    )
    store.put_text(key, revised.reward.code)
    timesteps = min(revised.timesteps or req.timesteps, req.timesteps_cap)
    changes = revised.changes or revised.diagnosis or "revised the reward"
    log.info("reward revised", diagnosis=revised.diagnosis, changes=changes, key=key)
    return ReviseResult(
        reward=_llm_artifact(key, revised.reward),
        timesteps=timesteps,
        changes=changes[:600],
        usage=call,
    )


@activity.defn(name="vlm_criteria")
def vlm_criteria(req: VisualCriteriaRequest) -> VisualCriteria:
    _llm_only("vlm_criteria", req.llm_model)
    criteria, call = vlm.visual_criteria(req.prompt, req.llm_model)
    return VisualCriteria(criteria=[VisualCriterion(**c) for c in criteria], usage=call)


@activity.defn(name="vlm_judge")
def vlm_judge(req: VlmJudgeRequest) -> VisualJudgment:
    """The rollout's video to a vision-language model: the mp4 itself when the model takes
    video, else evenly spaced frames."""
    _llm_only("vlm_judge", req.llm_model)
    from activities.judging.frames import sample_frames
    from activities.llm.providers.base import Media
    from activities.llm.providers.registry import make_provider

    log = activity_logger(model=req.llm_model, video=req.video_key)
    video = ArtifactStore().get_bytes(req.video_key)
    if "video" in make_provider(req.llm_model).accepts_media:
        media: tuple[Media, ...] = (Media("video/mp4", video),)
        shown = "video"
    else:
        media = tuple(Media("image/jpeg", f) for f in sample_frames(video, req.frames))
        shown = f"{len(media)} frames"
    criteria = [c.model_dump() for c in req.criteria]
    verdicts, call = vlm.judge_video(req.prompt, criteria, media, req.llm_model)
    score = sum(v["score"] for v in verdicts) / max(len(verdicts), 1)
    log.info("video judged", shown=shown, score=score)
    return VisualJudgment(
        score=round(score, 4),
        verdicts=[VisualVerdict(**v) for v in verdicts],
        shown=shown,
        usage=call,
    )


LLM_ACTIVITIES = [
    elicit_criteria,
    author_reward,
    author_judge,
    review_reward,
    fix_code,
    revise_reward,
    vlm_criteria,
    vlm_judge,
]
