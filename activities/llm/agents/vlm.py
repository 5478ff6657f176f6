"""The vision-language judge: visual criteria from the intent, then a verdict per rollout video.

Models that take video (Gemini) get the mp4; the others get evenly spaced frames.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError

from activities.llm.agents.common import answer_text, ask, render_prompt
from activities.llm.agents.context import intent_text, join
from activities.llm.providers.base import Media, ToolSpec
from workflows.contracts.usage import LLMCall

VERDICT_SCORES = {"met": 1.0, "partly": 0.5, "not_met": 0.0}

SUBMIT_VISUAL_CRITERIA = ToolSpec(
    name="submit_visual_criteria",
    description="Submit the visual criteria.",
    input_schema={
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "minItems": 2,
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "look_for": {"type": "string"}},
                    "required": ["name", "look_for"],
                },
            }
        },
        "required": ["criteria"],
    },
)

SUBMIT_VISUAL_JUDGMENT = ToolSpec(
    name="submit_visual_judgment",
    description="Submit a verdict for every visual criterion.",
    input_schema={
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "verdict": {"type": "string", "enum": list(VERDICT_SCORES)},
                        "reason": {"type": "string"},
                    },
                    "required": ["name", "verdict", "reason"],
                },
            }
        },
        "required": ["verdicts"],
    },
)


def visual_criteria(prompt: str, model: str) -> tuple[list[dict[str, str]], LLMCall]:
    """Two to five things to look for in a rollout video, derived from the prompt alone."""
    answer = ask(
        "vlm_criteria",
        model,
        system=render_prompt("vlm_criteria"),
        user=intent_text(prompt),
        tool=SUBMIT_VISUAL_CRITERIA,
    )
    raw = answer.arguments.get("criteria")
    if not isinstance(raw, list) or not 2 <= len(raw) <= 5:
        raise ApplicationError("vlm_criteria: expected 2-5 visual criteria", type="LLMBadAnswer")
    return [{"name": str(c["name"]), "look_for": str(c["look_for"])} for c in raw], answer.call


def judge_video(
    prompt: str,
    criteria: list[dict[str, str]],
    media: tuple[Media, ...],
    model: str,
) -> tuple[list[dict[str, Any]], LLMCall]:
    """[{name, verdict, score, reason}] for every criterion (a missing one is 'not_met')."""
    listed = "\n".join(f"- `{c['name']}`: {c['look_for']}" for c in criteria)
    shown = "a video" if media and media[0].kind == "video" else f"{len(media)} frames in order"
    answer = ask(
        "vlm_judge",
        model,
        system=render_prompt("vlm_judge"),
        user=join(intent_text(prompt), f"# Visual criteria\n\n{listed}", f"You are shown {shown}."),
        tool=SUBMIT_VISUAL_JUDGMENT,
        media=media,
    )
    given = {
        str(v.get("name")): v for v in answer.arguments.get("verdicts") or [] if isinstance(v, dict)
    }
    out = []
    for c in criteria:
        v = given.get(c["name"], {})
        said = v.get("verdict")
        verdict = said if isinstance(said, str) and said in VERDICT_SCORES else "not_met"
        out.append(
            {
                "name": c["name"],
                "verdict": verdict,
                "score": VERDICT_SCORES[verdict],
                "reason": answer_text(v, "reason", 300, default="no verdict given"),
            }
        )
    return out, answer.call
