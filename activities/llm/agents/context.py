"""The pieces of context agents put in their user messages: intent, env spec, criteria, code."""

from __future__ import annotations

from workflows.contracts.judging import Criterion, Judgment
from workflows.verdict import heading


def env_text(env_id: str) -> str:
    """The environment's spec (what reward and judge code can read), under a heading."""
    from activities.envs.spec import env_spec

    return f"# Environment {env_id}\n\n{env_spec(env_id).to_prompt()}"


def intent_text(prompt: str) -> str:
    """The user's prompt, under a heading: the behaviour every agent works toward."""
    return f"# The behaviour asked for\n\n{prompt.strip()}"


def criteria_text(criteria: list[Criterion]) -> str:
    """The judge's criteria as a list, so reward code and judges aim at the same targets."""
    lines = ["# Criteria the judge measures"]
    for c in criteria:
        unit = f" {c.unit}" if c.unit else ""
        tol = f" (tolerance {c.tolerance:g}{unit})" if c.direction == "near" else ""
        lines.append(
            f"- `{c.name}`: {c.description} Measure: {c.measure or c.metric or '-'} "
            f"Target: {c.direction.replace('_', ' ')} {c.target:g}{unit}{tol}."
        )
    return "\n".join(lines)


def judgment_text(j: Judgment, title: str = "Judgment") -> str:
    """A judgment (score, diagnosis, each criterion measured) for an agent to reason about."""
    lines = [heading(title, j.passed, j.score, j.criteria)]
    lines.append(j.diagnosis)
    lines += [c.line() for c in j.criteria]
    if j.failure_tags:
        lines.append("Failure tags: " + ", ".join(j.failure_tags))
    return "\n".join(lines)


def code_text(title: str, code: str) -> str:
    """Code in a fenced block under a title, for an agent to read or correct."""
    return f"# {title}\n\n```python\n{code.rstrip()}\n```"


def join(*parts: str) -> str:
    """The non-empty parts of a user message, separated by blank lines."""
    return "\n\n".join(p for p in parts if p)
