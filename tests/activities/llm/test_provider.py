"""Model names as the CLI and the workflow see them: offline, labels, up-front checks, prices."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from activities.llm.prices import estimate_cost, price_of
from activities.llm.provider import (
    check_model,
    default_model,
    is_offline,
    keys_present,
    model_label,
)
from activities.llm.providers.registry import KEY_VARS
from workflows.contracts.context import OFFLINE_LABEL

ALL_KEYS = sorted({var for vars_ in KEY_VARS.values() for var in vars_})


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in [*ALL_KEYS, "POLICYFORGE_LLM_MODEL", "POLICYFORGE_OPENAI_BASE_URL"]:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_offline_names_and_labels():
    assert is_offline("offline") and is_offline(" Offline ") and is_offline(OFFLINE_LABEL)
    assert model_label("offline") == OFFLINE_LABEL
    assert model_label("claude-sonnet-4-6") == "claude-sonnet-4-6"
    check_model("offline")  # never needs a key


def test_default_model_is_offline_without_keys(no_keys: pytest.MonkeyPatch):
    assert keys_present() == []
    assert default_model() == "offline"


@pytest.mark.parametrize(
    ("var", "expected"),
    [("ANTHROPIC_API_KEY", "claude-"), ("OPENAI_API_KEY", "gpt-"), ("GEMINI_API_KEY", "gemini-")],
)
def test_a_key_selects_its_provider(
    no_keys: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], var: str, expected: str
):
    no_keys.setenv(var, "sk-secret-value")
    assert keys_present() == [var]
    assert default_model().startswith(expected)
    out = capsys.readouterr()
    assert "sk-secret-value" not in out.out + out.err


@pytest.mark.parametrize(
    ("model", "var"),
    [
        ("claude-sonnet-4-6", "ANTHROPIC_API_KEY"),
        ("gpt-5.1", "OPENAI_API_KEY"),
        ("o3", "OPENAI_API_KEY"),
        ("gemini-2.5-pro", "GEMINI_API_KEY"),
    ],
)
def test_a_missing_key_is_one_line_naming_the_variable(
    no_keys: pytest.MonkeyPatch, model: str, var: str
):
    with pytest.raises(ApplicationError) as info:
        check_model(model)
    assert info.value.non_retryable and var in info.value.message
    assert "\n" not in info.value.message
    no_keys.setenv(var, "k")
    check_model(model)


def test_unknown_models_and_local_servers(no_keys: pytest.MonkeyPatch):
    with pytest.raises(ApplicationError) as info:
        check_model("llama3")
    assert info.value.message.startswith("llm_model: unknown model 'llama3'")
    with pytest.raises(ApplicationError) as info:
        check_model("openai-compatible:llama3")
    assert "POLICYFORGE_OPENAI_BASE_URL" in info.value.message
    no_keys.setenv("POLICYFORGE_OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    check_model("openai-compatible:llama3")  # local servers need no key


def test_prices_match_models_and_their_snapshots_only():
    assert price_of("claude-sonnet-4-6") == (3.0, 15.0)
    assert price_of("gpt-5.1-2025-11-13") == price_of("gpt-5.1")
    assert price_of("gpt-5.4") is None  # not gpt-5's price by accident
    assert estimate_cost("gpt-5", 1_000_000, 100_000) == pytest.approx(1.25 + 1.0)
    assert estimate_cost("openai-compatible:llama3", 10**6, 10**6) == 0.0
    assert estimate_cost("some-new-model", 10, 10) is None
