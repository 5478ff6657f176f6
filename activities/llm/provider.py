"""Model names: offline or a provider's model, its label, the default, and up-front checks.

Light to import (no SDKs): the CLI checks a model name and its key before it connects to
anything. The providers themselves live in `activities/llm/providers/`.
"""

from __future__ import annotations

import os

from temporalio.exceptions import ApplicationError

from activities.llm.providers import registry
from activities.llm.providers.errors import AUTH_ERROR
from workflows.contracts.context import OFFLINE_LABEL
from workflows.contracts.context import (  # the workflow's test, for activities
    is_offline as is_offline,
)


def llm_only(activity_name: str, model: str) -> None:
    """Refuse, non-retryably, an activity that needs a language model in an offline session."""
    if is_offline(model):
        raise ApplicationError(
            f"{activity_name} needs a language model; the offline author does not do it",
            type="NotSupportedOffline",
            non_retryable=True,
        )


def model_label(name: str) -> str:
    """What a person sees as the author of the reward ('offline (no LLM)' or the model)."""
    return OFFLINE_LABEL if is_offline(name) else name.strip()


def default_model() -> str:
    """POLICYFORGE_LLM_MODEL, else a model of the first provider whose key is set, else offline."""
    return registry.default_model()


def check_model(name: str) -> None:
    """Raise a non-retryable ApplicationError when `name` is unknown or its key is not set.

    Run where the calls will be made (the CLI on one machine, the LLM worker in production).
    """
    if is_offline(name):
        return
    missing = registry.missing_key(name)  # InvalidInput for names no provider serves
    if missing:
        raise ApplicationError(missing, type=AUTH_ERROR, non_retryable=True)


def keys_present() -> list[str]:
    """Names (never values) of the provider key variables that are set and non-empty."""
    names = [var for vars_ in registry.KEY_VARS.values() for var in vars_]
    return [var for var in dict.fromkeys(names) if os.environ.get(var, "").strip()]
