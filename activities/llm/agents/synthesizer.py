"""The judgment synthesizer: settles a disagreement between the trajectory judge and the video
judge, after looking at the trajectory and the video with bounded tools."""

from __future__ import annotations

from typing import Any, Literal

from activities.evidence import judgment_text
from activities.llm.agents.common import answer_text, render_prompt
from activities.llm.agents.context import intent_text, join
from activities.llm.agents.dialogue import Turn, take_turn, tool_budget_note
from activities.llm.agents.tool_specs import SYNTHESIZER_TOOLS
from activities.llm.providers.base import Message, ToolSpec
from workflows.contracts.llm import SynthesisRequest
from workflows.contracts.tools import SYNTH_TOOL_ROUNDS
from workflows.synthesis import verdicts_conflict

# Which judge the synthesizer sided with (SynthesisResult.trusted).
Trusted = Literal["trajectory", "video", "both"]

SUBMIT_SYNTHESIS = ToolSpec(
    name="submit_synthesis",
    description="Submit the settled judgment of the rollout.",
    input_schema={
        "type": "object",
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "trusted": {"type": "string", "enum": ["trajectory", "video", "both"]},
            "diagnosis": {"type": "string"},
        },
        "required": ["score", "trusted", "diagnosis"],
    },
)

ANSWER_QUESTION = ToolSpec(
    name="answer_question",
    description="Answer the question about the frames.",
    input_schema={
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    },
)


def opening(req: SynthesisRequest, episode_s: float | None = None) -> str:
    """The synthesizer's first message: both judges' verdicts side by side, and its tool budget."""
    visual = [f"# Video judge: score {req.visual.score:.2f} (shown {req.visual.shown})"]
    looks = {c.name: c.look_for for c in req.visual_criteria}
    for v in req.visual.verdicts:
        visual.append(f"- {v.name} ({looks.get(v.name, '')}): {v.verdict}. {v.reason}")
    length = f" The episode lasts {episode_s:.2f} s." if episode_s else ""
    return join(
        intent_text(req.prompt),
        f"# Environment\n\n{req.env_id}.{length}",
        judgment_text(req.code, "Trajectory judge"),
        "\n".join(visual),
        _verdict_at_stake(req),
        tool_budget_note(0, SYNTH_TOOL_ROUNDS),
    )


def _verdict_at_stake(req: SynthesisRequest) -> str:
    """What rides on the answer when the judges disagree on the verdict ("" when they only
    disagree on the score)."""
    if not verdicts_conflict(req.code, req.visual):
        return ""
    unmet = ", ".join(f"`{v.name}`" for v in req.visual.verdicts if v.verdict == "not_met")
    return (
        "# The verdict is at stake\n\n"
        f"Every measured criterion is met, but the video judge says {unmet} not met. Trust "
        "`trajectory` and the rollout passes; trust `video` and it does not; `both` settles "
        "nothing, and it does not pass."
    )


def synthesis_turn(model: str, messages: list[Message], final: bool) -> Turn:
    """One call of the synthesizer, with its tools unless it must submit now."""
    return take_turn(
        "synthesizer",
        model,
        system=render_prompt("synthesizer"),
        messages=messages,
        tools=SYNTHESIZER_TOOLS,
        submit=SUBMIT_SYNTHESIS,
        final=final,
    )


def settled(args: dict[str, Any]) -> tuple[float | None, Trusted, str]:
    """(score or None when unusable, trusted, diagnosis) from the submitted arguments."""
    score = args.get("score")
    value = float(score) if isinstance(score, int | float) and 0 <= score <= 1 else None
    said = args.get("trusted")
    trusted: Trusted = said if said == "trajectory" or said == "video" else "both"
    return value, trusted, answer_text(args, "diagnosis", 600)


def video_question(prompt: str, question: str, window: str) -> str:
    """The video model's question about a window of the episode (the ask_video tool)."""
    return join(
        intent_text(prompt),
        f"# Question about {window} of the episode\n\n{question.strip()}",
        "The frames are in order, evenly spaced over that window. Answer in two or three "
        "sentences from what is visible, by calling `answer_question`.",
    )
