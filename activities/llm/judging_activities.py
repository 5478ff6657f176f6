"""The LLM side of judging: visual criteria, a verdict per rollout video, and the synthesizer
that settles a disagreement between the trajectory judge and the video judge (one call per
activity; `ask_video` answers the synthesizer's questions about a window of the video)."""

from __future__ import annotations

import io
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from activities.artifacts import ArtifactStore
from activities.llm.agents import dialogue, synthesizer, vlm
from activities.llm.agents.answers import within_cost
from activities.llm.agents.common import answer_text, ask, render_prompt
from activities.llm.provider import llm_only
from activities.llm.providers.base import Media
from activities.logs import activity_logger
from workflows.contracts import keys
from workflows.contracts.activities import (
    ASK_VIDEO,
    SYNTHESIZE_JUDGMENT,
    VLM_CRITERIA,
    VLM_JUDGE,
    implements,
)
from workflows.contracts.judging import (
    VisualCriteria,
    VisualCriterion,
    VisualJudgment,
    VisualVerdict,
)
from workflows.contracts.llm import (
    SynthesisRequest,
    SynthesisResult,
    VisualCriteriaRequest,
    VlmJudgeRequest,
)
from workflows.contracts.tools import AskVideoRequest, ToolOutcome


@implements(VLM_CRITERIA)
@within_cost
def vlm_criteria(req: VisualCriteriaRequest) -> VisualCriteria:
    """What the video judge looks for, derived from the prompt by the model."""
    llm_only("vlm_criteria", req.llm_model)
    criteria, call = vlm.visual_criteria(req.prompt, req.llm_model, req.env_id, req.measured)
    return VisualCriteria(criteria=[VisualCriterion(**c) for c in criteria], usage=call)


@implements(VLM_JUDGE)
@within_cost
def vlm_judge(req: VlmJudgeRequest) -> VisualJudgment:
    """The rollout's video to a vision-language model: the mp4 itself when the model takes
    video, else at least 16 evenly spaced frames with their times; with the visual criteria
    it judges and the criteria (and targets) the trajectory judge measures."""
    llm_only("vlm_judge", req.llm_model)
    from activities.llm.providers.registry import make_provider

    log = activity_logger(model=req.llm_model, video=req.video_key)
    video = ArtifactStore().get_bytes(req.video_key)
    takes_video = "video" in make_provider(req.llm_model).accepts_media
    media, shown, told = vlm.rollout_media(video, takes_video, req.frames)
    criteria = [c.model_dump() for c in req.criteria]
    verdicts, call = vlm.judge_video(
        req.prompt,
        criteria,
        media,
        req.llm_model,
        env_id=req.env_id,
        told=told,
        measured=req.measured,
    )
    score = sum(v["score"] for v in verdicts) / max(len(verdicts), 1)
    log.info("video judged", shown=shown, score=score)
    judgment = VisualJudgment(
        score=round(score, 4),
        verdicts=[VisualVerdict(**v) for v in verdicts],
        shown=shown,
        usage=call,
    )
    # Next to the video, for people and the dashboard (the workflow keeps only the score).
    visual_key = keys.visual_judgment_key(req.video_key)
    if visual_key is not None:
        ArtifactStore().put_text(visual_key, judgment.model_dump_json(exclude={"usage"}, indent=1))
    return judgment


@implements(SYNTHESIZE_JUDGMENT)
@within_cost
def synthesize_judgment(req: SynthesisRequest) -> SynthesisResult:
    """One call of the synthesizer, which settles a disagreement between the judges; it may
    end in tool calls (measure the trajectory, ask the video model) for the workflow to run."""
    llm_only("synthesize_judgment", req.llm_model)
    log = activity_logger(model=req.llm_model, video=req.video_key)
    store = ArtifactStore()

    def opening() -> str:
        with np.load(io.BytesIO(store.get_bytes(req.trajectory_key))) as traj:
            episode_s = len(traj["reward"]) * float(traj["meta_dt"])
        return synthesizer.opening(req, episode_s)

    turn, transcript_key = dialogue.next_turn(
        store, req, req.folder, opening, partial(synthesizer.synthesis_turn, req.llm_model)
    )
    if transcript_key is not None:
        log.info("synthesizer looks up", calls=[c.label() for c in turn.tool_calls])
        return SynthesisResult(
            done=False, tool_calls=turn.tool_calls, transcript_key=transcript_key, usage=turn.call
        )
    score, trusted, diagnosis = synthesizer.settled(turn.arguments)
    log.info("judges reconciled", score=score, trusted=trusted)
    return SynthesisResult(
        score=score,
        trusted=trusted,
        diagnosis=diagnosis,
        usage=turn.call,
    )


@implements(ASK_VIDEO)
def ask_video(req: AskVideoRequest) -> ToolOutcome:
    """An agent's question about a time window of the video: frames of that window to the
    video model, its answer to S3 for the agent's next call."""
    llm_only("ask_video", req.llm_model)
    from activities.llm.frames import timed_frames

    store = ArtifactStore()
    args = req.call.arguments
    start, end = args.get("start_s"), args.get("end_s")
    question = str(args.get("question") or "").strip()
    # A bad question or window is an answer the model reads, as session_tool's errors are.
    try:
        if not question:
            raise ValueError("ask_video needs a question")
        if not isinstance(start, int | float) or not isinstance(end, int | float | None):
            raise ValueError("start_s and end_s must be numbers of seconds")
        frames = timed_frames(store.get_bytes(req.video_key), req.frames, start_s=start, end_s=end)
    except ValueError as exc:
        store.put_text(req.result_key, f"error: {exc}")
        return ToolOutcome(
            call_id=req.call.id,
            name=req.call.name,
            key=req.result_key,
            is_error=True,
            summary=str(exc),
        )
    window = f"{start:g}-{end:g} s" if end is not None else f"{start:g} s to the end"
    answer = ask(
        "video_question",
        req.llm_model,
        system=render_prompt("video_question"),
        user=synthesizer.video_question(req.prompt, question, window),
        tool=synthesizer.ANSWER_QUESTION,
        # Each frame's time right before it, so answers can say when.
        media=tuple(
            Media("image/jpeg", f.jpeg, caption=f"t = {f.time_s:.2f} s") for f in frames.frames
        ),
    )
    text = answer_text(answer.arguments, "answer") or "(no answer)"
    store.put_text(req.result_key, text)
    return ToolOutcome(
        call_id=req.call.id,
        name=req.call.name,
        key=req.result_key,
        summary=text[:200],
        usage=answer.call,
    )


JUDGING_LLM_ACTIVITIES: list[Callable[..., Any]] = [
    vlm_criteria,
    vlm_judge,
    synthesize_judgment,
    ask_video,
]
