"""The pieces of context agents put in their user messages: intent, env spec, criteria, code."""

from __future__ import annotations

from workflows.contracts.judging import Criterion, Judgment


def env_text(env_id: str) -> str:
    from activities.envs.spec import env_spec

    return f"# Environment {env_id}\n\n{env_spec(env_id).to_prompt()}"


def intent_text(prompt: str) -> str:
    return f"# The behaviour asked for\n\n{prompt.strip()}"


def criteria_text(criteria: list[Criterion]) -> str:
    lines = ["# Criteria the judge measures"]
    for c in criteria:
        tol = f" (tolerance {c.tolerance:g})" if c.direction == "near" else ""
        lines.append(
            f"- `{c.name}`: {c.description} Measure: {c.measure or c.metric or '-'} "
            f"Target: {c.direction.replace('_', ' ')} {c.target:g}{tol}."
        )
    return "\n".join(lines)


def judgment_text(j: Judgment, title: str = "Judgment") -> str:
    lines = [f"# {title}: score {j.score:.2f}, {'passed' if j.passed else 'not passed'}"]
    lines.append(j.diagnosis)
    for c in j.criteria:
        lines.append(
            f"- {c.name}: measured {c.value:g}, target {c.direction} {c.target:g}, "
            f"score {c.score:.2f}"
        )
    if j.failure_tags:
        lines.append("Failure tags: " + ", ".join(j.failure_tags))
    return "\n".join(lines)


def code_text(title: str, code: str) -> str:
    return f"# {title}\n\n```python\n{code.rstrip()}\n```"


def join(*parts: str) -> str:
    return "\n\n".join(p for p in parts if p)
