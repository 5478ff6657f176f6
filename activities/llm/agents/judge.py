"""The judge author: intent + criteria -> judge_fn(trajectory) code, once per session."""

from __future__ import annotations

from activities.llm.agents.common import answer_text, ask, clean_code, render_prompt, require
from activities.llm.agents.context import (
    criteria_text,
    env_text,
    intent_text,
    join,
    lessons_text,
)
from activities.llm.providers.base import ToolSpec
from workflows.contracts.judging import Criterion
from workflows.contracts.usage import LLMCall

SUBMIT_JUDGE = ToolSpec(
    name="submit_judge",
    description="Submit the judge module defining judge_fn(trajectory).",
    input_schema={
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "the whole Python module"},
            "summary": {"type": "string"},
        },
        "required": ["code"],
    },
)


def author_judge(
    prompt: str, env_id: str, criteria: list[Criterion], model: str, lessons: str = ""
) -> tuple[str, str, LLMCall]:
    """(code, one-line summary, call); `lessons`: the lesson page of earlier sessions on this
    intent, if any."""
    answer = ask(
        "judge_author",
        model,
        system=render_prompt("judge_author", judge_contract=render_prompt("judge_contract")),
        user=join(
            intent_text(prompt), env_text(env_id), criteria_text(criteria), lessons_text(lessons)
        ),
        tool=SUBMIT_JUDGE,
        parse=lambda args: clean_code(require(args, "code", str, "judge_author")),
    )
    return answer.value, answer_text(answer.arguments, "summary", 300), answer.call
