"""Validate-and-fix: the error of a failed validation goes back to the model with its code."""

from __future__ import annotations

from typing import Any, Literal

from activities.llm.agents.common import ask, clean_code, render_prompt, require
from activities.llm.agents.context import code_text, criteria_text, env_text, intent_text, join
from activities.llm.agents.judge import SUBMIT_JUDGE
from activities.llm.agents.reward import SUBMIT_REWARD
from workflows.models import Criterion, LLMCall


def fix(
    kind: Literal["reward", "judge"],
    prompt: str,
    env_id: str,
    criteria: list[Criterion],
    code: str,
    error: str,
    attempt: int,
    model: str,
) -> tuple[dict[str, Any], LLMCall]:
    """The fixed code's fields (code, and for rewards latex/terms/summary)."""
    tool = SUBMIT_REWARD if kind == "reward" else SUBMIT_JUDGE
    contract = render_prompt("reward_contract" if kind == "reward" else "judge_contract")
    answer = ask(
        f"fixer_{kind}",
        model,
        system=render_prompt("fixer", tool=tool.name, contract=contract),
        user=join(
            intent_text(prompt),
            env_text(env_id),
            criteria_text(criteria),
            code_text(f"The {kind} code (attempt {attempt})", code),
            f"# The error\n\n{error}",
        ),
        tool=tool,
    )
    args = dict(answer.arguments)
    args["code"] = clean_code(require(args, "code", str, f"fixer_{kind}"))
    return args, answer.call
