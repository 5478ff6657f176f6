"""Validate-and-fix: the error of a failed validation goes back to the model with its code."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from activities.llm.agents.common import ask, render_prompt
from activities.llm.agents.context import code_text, criteria_text, env_text, intent_text, join
from activities.llm.agents.judge import SUBMIT_JUDGE
from activities.llm.agents.reward import SUBMIT_REWARD, RewardCode
from workflows.contracts.judging import Criterion
from workflows.contracts.usage import LLMCall

_LATER = (
    "# When it failed\n\nThis code passed validation on random steps and failed later: while a "
    "policy trained on it, or on another episode than the one it was validated on. The failing "
    "branch is one random actions do not reach (a phase, a contact, a long episode, a fall): "
    "make every branch safe for any finite input, not only the one in the error."
)


def fix(
    kind: Literal["reward", "judge"],
    prompt: str,
    env_id: str,
    criteria: list[Criterion],
    code: str,
    error: str,
    attempt: int,
    model: str,
    after_validation: bool = False,
) -> tuple[RewardCode, LLMCall]:
    """The fixed code with its latex, terms and summary (a judge's has only a summary).
    `after_validation`: the code had passed validation and failed later, on states only a
    trained policy reached (training) or on another episode (judging)."""
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
            _LATER if after_validation else "",
        ),
        tool=tool,
        parse=lambda args: RewardCode.from_args(args, f"fixer_{kind}"),
    )
    fixed: RewardCode = answer.value
    # The summary goes on as the model wrote it (kept from before this code was shared).
    return replace(fixed, summary=str(answer.arguments.get("summary") or "")), answer.call
