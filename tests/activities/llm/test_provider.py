"""Model names, the default model, and the provider interface's shape."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from activities.llm.offline import OfflineAuthor
from activities.llm.provider import (
    PROVIDER_KEYS,
    Completion,
    LLMProvider,
    Message,
    Usage,
    default_model,
    get_author,
    keys_present,
    model_label,
    resolve_model,
)
from workflows.models import OFFLINE_LABEL

ALL_KEYS = [var for vars_ in PROVIDER_KEYS.values() for var in vars_]


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ALL_KEYS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_offline_resolves_to_the_offline_author():
    assert resolve_model("offline") == "offline"
    assert resolve_model(" Offline ") == "offline"
    assert model_label("offline") == OFFLINE_LABEL
    assert isinstance(get_author("offline"), OfflineAuthor)


@pytest.mark.parametrize("name", ["claude-sonnet-4-5", "gpt-4o", "gemini-2.5-pro", "llama3"])
def test_real_models_are_a_clear_non_retryable_error(name: str):
    for call in (resolve_model, get_author):
        with pytest.raises(ApplicationError) as info:
            call(name)
        err = info.value
        assert err.type == "ProviderUnavailable" and err.non_retryable
        assert "not yet available in this build" in err.message
        assert "--llm offline" in err.message and name in err.message


def test_default_model_is_offline_without_keys(no_keys: pytest.MonkeyPatch):
    assert keys_present() == []
    assert default_model() == "offline"


@pytest.mark.parametrize("var", ALL_KEYS)
def test_a_key_for_a_provider_this_build_lacks_still_means_offline(
    no_keys: pytest.MonkeyPatch, var: str, capsys: pytest.CaptureFixture[str]
):
    no_keys.setenv(var, "sk-secret-value")
    assert keys_present() == [var]
    assert default_model() == "offline"
    out = capsys.readouterr()
    assert "sk-secret-value" not in out.out + out.err


def test_provider_protocol_is_structural():
    class Echo:
        name = "echo"
        model = "echo-1"

        def complete(self, messages, *, system=None, tools=None, max_tokens=4096, temperature=0.0):
            return Completion(text=messages[-1].content, usage=Usage(1, 1), model=self.model)

    provider = Echo()
    assert isinstance(provider, LLMProvider)
    out = provider.complete([Message(role="user", content="hi")])
    assert out.text == "hi" and out.stop_reason == "end"
    assert (out.usage + Usage(2, 3)).output_tokens == 4
