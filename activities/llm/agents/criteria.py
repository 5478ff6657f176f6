"""The intent elicitor: a sentence -> 3-8 measurable behavioural criteria."""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError

from activities.behaviours.measured import checked
from activities.behaviours.metrics import METRICS, available_metrics
from activities.llm.agents.answers import Declined
from activities.llm.agents.common import ask, render_prompt
from activities.llm.agents.context import env_text, intent_text, join, lessons_text
from activities.llm.providers.base import ToolSpec
from workflows.contracts.judging import Criterion
from workflows.contracts.usage import LLMCall

MIN_CRITERIA, MAX_CRITERIA = 3, 8

SUBMIT_CRITERIA = ToolSpec(
    name="submit_criteria",
    description="Submit the behavioural criteria for the intent.",
    input_schema={
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "minItems": MIN_CRITERIA,
                "maxItems": MAX_CRITERIA,
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "measure": {"type": "string"},
                        "target": {"type": "number"},
                        "direction": {"type": "string", "enum": ["at_least", "at_most", "near"]},
                        "tolerance": {"type": "number"},
                        "unit": {"type": "string"},
                        "metric": {
                            "type": "string",
                            "description": "a behaviour-library metric listed in the message, "
                            "only when the criterion is exactly that measure",
                        },
                    },
                    "required": ["name", "description", "measure", "target", "direction"],
                },
            },
            "refusal": {
                "type": "string",
                "description": "only when this body cannot do the behaviour at all, whatever "
                "the reward: why, in one sentence (then send no criteria)",
            },
        },
        "required": ["criteria"],
    },
)


def elicit(
    prompt: str,
    env_id: str,
    model: str,
    budget: tuple[int, str, int] = (0, "ppo", 0),
    lessons: str = "",
) -> tuple[list[Criterion], LLMCall]:
    """The criteria the judge will score, elicited from the model for this prompt and env,
    told the training budget (steps per run, algorithm, iterations) and what random actions
    do in the env, so that targets are reachable by training and out of reach of chance."""
    from activities.envs.random_rollout import random_rollout_text

    system = render_prompt("elicitor", judge_contract=render_prompt("judge_contract"))
    answer = ask(
        "elicitor",
        model,
        system=system,
        user=join(
            intent_text(prompt),
            env_text(env_id),
            metrics_text(env_id),
            budget_text(*budget),
            random_rollout_text(env_id),
            lessons_text(lessons),
        ),
        tool=SUBMIT_CRITERIA,
        parse=lambda args: parse_criteria(declined(args).get("criteria"), env_id),
    )
    criteria: list[Criterion] = answer.value
    return criteria, answer.call


def declined(args: dict[str, Any]) -> dict[str, Any]:
    """The answer, unless it declines the intent (Declined: the session ends "refused")."""
    reason = " ".join(str(args.get("refusal") or "").split())
    if reason:
        raise Declined(reason)
    return args


def metrics_text(env_id: str) -> str:
    """The behaviour library's metrics for this env, with how people read them and their
    units: what a criterion may name as its `metric`."""
    lines = [
        "# Behaviour-library metrics of this environment",
        "",
        "A criterion that is exactly one of these measures names it as its `metric` (the "
        "judge's measured value is then checked against the library's on the same episode); "
        "leave `metric` out for any other measure.",
        "",
    ]
    for name in available_metrics(env_id):
        m = METRICS[name]
        unit = f", {m.unit}" if m.unit else ""
        lines.append(f"- `{name}`: {m.label}{unit}")
    return "\n".join(lines)


def budget_text(timesteps: int, algo: str, iterations: int) -> str:
    """The training the criteria's targets must be reachable in."""
    if timesteps <= 0:
        return ""
    more = f", up to {iterations} iterations of revising the reward" if iterations > 1 else ""
    return (
        f"# Training budget\n\nEach policy trains up to {timesteps:,} environment steps of "
        f"{_trainer(algo)} per iteration{more}. Set targets that a "
        "policy trained this long reaches when it does the behaviour well."
    )


def _trainer(algo: str) -> str:
    """The trainer in words: PPO runs on policyforge's own engine, the others on SB3."""
    if algo == "ppo":
        return "PPO (policyforge's vectorised trainer, rl-zoo's settings for this body)"
    return f"{algo.upper()} (Stable-Baselines3)"


def parse_criteria(raw: Any, env_id: str) -> list[Criterion]:
    """Validated criteria; a retryable LLMBadAnswer naming the field when the model's list is
    unusable (a metric this env's library lacks, a `near` criterion without a tolerance)."""
    if not isinstance(raw, list):
        raise ApplicationError("elicitor: the answer has no criteria list", type="LLMBadAnswer")
    out: list[Criterion] = []
    for item in raw:
        try:
            criterion = Criterion(
                name=str(item["name"]).strip().replace(" ", "_"),
                description=str(item["description"]).strip(),
                measure=str(item.get("measure", "")).strip(),
                metric=str(item.get("metric") or "").strip() or None,
                target=float(item["target"]),
                direction=item.get("direction", "at_least"),
                tolerance=float(item.get("tolerance") or 0.0),
                unit=str(item.get("unit") or "").strip()[:20],
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ApplicationError(
                f"elicitor: criterion {item!r:.120} is malformed ({exc})", type="LLMBadAnswer"
            ) from None
        try:
            criterion = checked(criterion, env_id)
        except ValueError as exc:
            raise ApplicationError(
                f"elicitor: criterion {criterion.name!r} {exc}", type="LLMBadAnswer"
            ) from None
        out.append(criterion)
    names = [c.name for c in out]
    if not MIN_CRITERIA <= len(out) <= MAX_CRITERIA or len(set(names)) != len(names):
        raise ApplicationError(
            f"elicitor: expected {MIN_CRITERIA}-{MAX_CRITERIA} uniquely named criteria, got "
            f"{names}",
            type="LLMBadAnswer",
        )
    return out
