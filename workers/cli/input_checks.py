"""Checking a command's input before anything runs or connects.

Bad input ends the command with one line, `error: ...`, that names every problem at once, so a
person fixes them in one go and a session with bad input never reaches the server.
"""

from __future__ import annotations

from typing import Any

from workflows.contracts.session import ENV_IDS, input_errors


def env_errors(env_id: str) -> list[str]:
    """The one-line --env error, or none for a known environment."""
    if env_id in ENV_IDS:
        return []
    return [f"--env: unknown environment {env_id!r}; choose one of {', '.join(ENV_IDS)}"]


def exit_on(errors: list[str]) -> None:
    """Bad input ends the command with one line naming every problem."""
    if errors:
        raise SystemExit("error: " + "; ".join(errors))


def check_session_input(data: dict[str, Any]) -> None:
    """Validate a session's input before connecting: bad input never reaches the server.

    Besides the SessionInput rules: the offline author must have a template for the prompt,
    and an LLM model must be known and have its provider's key set.
    """
    exit_on(session_input_errors(data))


def session_input_errors(data: dict[str, Any]) -> list[str]:
    """What `check_session_input` refuses, one line each (`policyforge.Session.start` raises
    them instead of ending the process)."""
    from temporalio.exceptions import ApplicationError

    from activities.llm.provider import is_offline

    errors = input_errors(data)
    if not errors and is_offline(data["llm_model"]):
        from activities.llm.offline import match_intent

        try:
            match_intent(data["prompt"], data["env_id"])
        except ApplicationError as exc:
            errors.append(f"prompt: {exc.message}")
    elif not errors:
        errors += model_errors(data["llm_model"])
    return errors


def model_errors(model: str) -> list[str]:
    """The one-line error for an unknown model or one whose provider key is not set."""
    from temporalio.exceptions import ApplicationError

    from activities.llm.provider import check_model

    try:
        check_model(model)
    except ApplicationError as exc:
        message = exc.message
        return [message if message.startswith("llm_model") else f"--llm: {message}"]
    return []
