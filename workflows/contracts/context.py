"""The base every contract derives from, and the session context LLM requests share.

Every LLM request restates which session it is for, what the person asked and which model
answers (and most, which environment): they inherit these fields from `PromptContext` and
`SessionContext` here rather than spelling them again. Inheritance keeps the JSON field names,
types and defaults as they were, so recorded histories still replay.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

# The offline author (deterministic templates, no network): `llm_model`'s default.
OFFLINE_MODEL = "offline"
OFFLINE_LABEL = "offline (no LLM)"


def is_offline(model: str) -> bool:
    """The offline author (no LLM), by its name or its label."""
    return model.strip().lower() in (OFFLINE_MODEL, OFFLINE_LABEL.lower())


class Contract(BaseModel):
    """The base of every payload between the workflow and the activities. Fields it does not
    know are ignored: a worker of one release must decode what a worker of the next release
    wrote (a field added there), or a deploy would break the sessions in flight. What a person
    types is stricter (`UserInput`)."""

    model_config = ConfigDict(extra="ignore")


class UserInput(Contract):
    """What a person sends (a session's input, an approval): an unknown field is rejected with
    a one-line error naming it, so a typo never silently does nothing."""

    model_config = ConfigDict(extra="forbid")


def field_errors(exc: ValidationError, where: str) -> list[str]:
    """A person's input that did not validate, as one line per field ("seeds: ..."); an
    unknown field says where the known ones are listed (`where`)."""
    out = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "input"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = f"unknown field; remove it (see {where})"
        out.append(f"{field}: {msg}")
    return out


class PromptContext(Contract):
    """The session, the person's prompt and the model that answers: what every LLM request
    carries (the vision requests, which watch a video, need no more)."""

    session_id: str
    prompt: str
    llm_model: str
    # What the session's LLM cost cap leaves when this call starts (None: no cap): an answer
    # in the wrong form is repaired only while its calls fit.
    cost_left_usd: float | None = None


class SessionContext(PromptContext):
    """`PromptContext` and the environment: what the LLM requests about a policy carry."""

    env_id: str
