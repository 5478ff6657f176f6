"""The pieces of context agents put in their user messages: intent, env spec, criteria, code."""

from __future__ import annotations

from workflows.models import Criterion


def env_text(env_id: str) -> str:
    from activities.training.envspec import env_spec

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


def code_text(title: str, code: str) -> str:
    return f"# {title}\n\n```python\n{code.rstrip()}\n```"


def join(*parts: str) -> str:
    return "\n\n".join(p for p in parts if p)
