"""The real Anthropic, OpenAI and Gemini SDK clients against the local fake provider server.

No SDK is mocked: each provider is built by the registry from environment variables that point
its base URL at `FakeLLMServer`, which answers in that provider's wire format.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.llm.providers.base import (
    LLMProvider,
    Media,
    Message,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from activities.llm.providers.errors import retry_after
from activities.llm.providers.registry import (
    DEFAULT_MODELS,
    ProviderChoice,
    default_model,
    make_provider,
    missing_key,
    resolve,
)
from tests.fakes.llm_server import Error, FakeLLMServer, Hang, Text, Tools, prompt_of

PROVIDERS = ["anthropic", "openai", "gemini", "openai-compatible"]
MODELS = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5",
    "gemini": "gemini-2.5-pro",
    "openai-compatible": "openai-compatible:llama3.1:8b",
}
KEYS = {  # provider -> (variable, a fake secret that must never show up in a message)
    "anthropic": ("ANTHROPIC_API_KEY", "sk-ant-test-9f8e7d6c5b4a3921"),
    "openai": ("OPENAI_API_KEY", "sk-proj-test-1a2b3c4d5e6f7081"),
    "gemini": ("GEMINI_API_KEY", "AIzaTest-5e6f7a8b9c0d1e2f3a4b"),
    "openai-compatible": ("POLICYFORGE_OPENAI_API_KEY", "local-test-0c1d2e3f4a5b6c7d"),
}
# Everything that could leak in from the developer's shell and change routing or auth.
ENV_VARS = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_PROFILE",
    "OPENAI_API_KEY",
    "OPENAI_ADMIN_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_CUSTOM_HEADERS",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_GENAI_API_VERSION",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "POLICYFORGE_OPENAI_BASE_URL",
    "POLICYFORGE_OPENAI_API_KEY",
    "POLICYFORGE_LLM_MODEL",
    "POLICYFORGE_LLM_TIMEOUT_S",
]

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather in a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _b64(text: str) -> bytes:
    # google-genai writes bytes URL-safe; the APIs accept either alphabet.
    return base64.b64decode(text.replace("-", "+").replace("_", "/"))


@pytest.fixture
def fake(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    """The server, emptied, with every provider's key and base URL pointing at it."""
    server.reset()
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url("openai"))
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url("gemini"))
    monkeypatch.setenv("POLICYFORGE_OPENAI_BASE_URL", server.base_url("openai-compatible"))
    for var, secret in KEYS.values():
        monkeypatch.setenv(var, secret)
    return server


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def _wire(name: str) -> str:
    return "openai" if name == "openai-compatible" else name


def _raises(call: Callable[[], Any]) -> ApplicationError:
    with pytest.raises(ApplicationError) as info:
        call()
    return info.value


def _user(text: str = "hello", media: tuple[Media, ...] = ()) -> list[Message]:
    return [Message(role="user", content=text, media=media)]


# --- per-provider wire-format readers, for assertions on recorded requests ---------------------


def _gemini_get(d: dict[str, Any], camel: str, snake: str) -> Any:
    # google-genai sends some fields snake_case; the API accepts both spellings.
    return d[camel] if camel in d else d[snake]


def _tools_sent(name: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool declarations in a request, as {name, description, schema}."""
    if name == "anthropic":
        return [
            {"name": t["name"], "description": t["description"], "schema": t["input_schema"]}
            for t in body["tools"]
        ]
    if name == "gemini":
        decls = _gemini_get(body["tools"][0], "functionDeclarations", "function_declarations")
        return [
            {
                "name": d["name"],
                "description": d["description"],
                "schema": _gemini_get(d, "parametersJsonSchema", "parameters_json_schema"),
            }
            for d in decls
        ]
    assert all(t["type"] == "function" for t in body["tools"])
    return [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "schema": t["function"]["parameters"],
        }
        for t in body["tools"]
    ]


def _check_tool_round_trip(
    name: str, body: dict[str, Any], call: ToolCall, first_reply: dict[str, Any]
) -> None:
    """The second request replays the model's call and carries our result, as the API wants."""
    if name == "anthropic":
        assistant, result = body["messages"][-2], body["messages"][-1]
        assert assistant["role"] == "assistant"
        assert assistant["content"] == [
            {"type": "tool_use", "id": call.id, "name": "get_weather", "input": {"city": "Paris"}}
        ]
        assert result == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": "18C and sunny",
                    "is_error": False,
                }
            ],
        }
    elif name == "gemini":
        model_turn, result = body["contents"][-2], body["contents"][-1]
        assert model_turn["role"] == "model"
        sent_part = first_reply["candidates"][0]["content"]["parts"][0]
        part = model_turn["parts"][0]
        assert _gemini_get(part, "functionCall", "function_call") == {
            "name": "get_weather",
            "args": {"city": "Paris"},
        }
        # Gemini 3 rejects a replayed call without its thought signature.
        signature = _gemini_get(part, "thoughtSignature", "thought_signature")
        assert _b64(signature) == _b64(sent_part["thoughtSignature"])
        assert result["role"] == "user"
        assert _gemini_get(result["parts"][0], "functionResponse", "function_response") == {
            "name": "get_weather",
            "response": {"output": "18C and sunny"},
        }
    else:
        assistant, result = body["messages"][-2], body["messages"][-1]
        assert assistant["role"] == "assistant"
        (tc,) = assistant["tool_calls"]
        assert tc["id"] == call.id and tc["type"] == "function"
        assert tc["function"]["name"] == "get_weather"
        assert json.loads(tc["function"]["arguments"]) == {"city": "Paris"}
        assert result == {"role": "tool", "tool_call_id": call.id, "content": "18C and sunny"}


def _images_sent(name: str, body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """(mime type, decoded data) of every inline image/video in the request."""
    if name == "anthropic":
        return [
            (b["source"]["media_type"], _b64(b["source"]["data"]))
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "image" and b["source"]["type"] == "base64"
        ]
    if name == "gemini":
        found = []
        for content in body["contents"]:
            for part in content["parts"]:
                blob = part.get("inlineData") or part.get("inline_data")
                if blob:
                    found.append((_gemini_get(blob, "mimeType", "mime_type"), _b64(blob["data"])))
        return found
    found = []
    for m in body["messages"]:
        for part in m["content"] if isinstance(m["content"], list) else []:
            if part["type"] == "image_url":
                header, data = part["image_url"]["url"].split(",", 1)
                found.append((header.removeprefix("data:").removesuffix(";base64"), _b64(data)))
    return found


# --- the four providers, same behaviour -------------------------------------------------------


@pytest.mark.parametrize("name", PROVIDERS)
def test_text_reply_with_usage(fake: FakeLLMServer, name: str) -> None:
    fake.push(name, Text("Hello there.", input_tokens=31, output_tokens=4, cache_read_tokens=9))
    provider = make_provider(MODELS[name])
    assert isinstance(provider, LLMProvider)
    assert provider.name == name

    c = provider.complete(_user("Say hello."), system="You are terse.", max_tokens=64)

    assert c.text == "Hello there."
    assert c.tool_calls == ()
    assert c.stop_reason == "end"
    # input_tokens never includes cache reads, whichever way the provider reports them.
    assert (c.usage.input_tokens, c.usage.output_tokens, c.usage.cache_read_tokens) == (31, 4, 9)
    assert c.model == MODELS[name].removeprefix("openai-compatible:")
    (req,) = fake.requests
    assert req.provider == _wire(name)
    assert req.prompt() == ("You are terse.", "Say hello.")


@pytest.mark.parametrize("name", PROVIDERS)
def test_tool_call_round_trip(fake: FakeLLMServer, name: str) -> None:
    fake.push(name, Tools(calls=[("get_weather", {"city": "Paris"})]), Text("It is sunny."))
    provider = make_provider(MODELS[name])
    question = Message(role="user", content="Weather in Paris?")

    first = provider.complete([question], tools=[WEATHER])

    assert first.stop_reason == "tool_use"
    (call,) = first.tool_calls
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert _tools_sent(name, fake.requests[0].body) == [
        {"name": "get_weather", "description": WEATHER.description, "schema": WEATHER.input_schema}
    ]

    second = provider.complete(
        [
            question,
            Message(role="assistant", content=first.text, tool_calls=first.tool_calls),
            # No name: Gemini must find it from the matching call.
            Message(role="tool", tool_results=(ToolResult(call.id, "18C and sunny"),)),
        ],
        tools=[WEATHER],
    )

    assert second.text == "It is sunny." and second.stop_reason == "end"
    _check_tool_round_trip(name, fake.requests[1].body, call, fake.responses[0][2])


@pytest.mark.parametrize("name", PROVIDERS)
def test_image_is_sent_inline_as_base64(fake: FakeLLMServer, name: str) -> None:
    fake.push(name, Text("A single pixel."))
    provider = make_provider(MODELS[name])
    assert "image" in provider.accepts_media

    c = provider.complete(_user("What is this?", (Media("image/png", PNG),)))

    assert c.text == "A single pixel."
    assert _images_sent(name, fake.requests[0].body) == [("image/png", PNG)]
    assert fake.requests[0].prompt().user == "What is this?"


@pytest.mark.parametrize("name", PROVIDERS)
def test_rate_limit_honours_retry_after(fake: FakeLLMServer, name: str) -> None:
    fake.push(name, Error(429, "Too many requests, slow down.", headers={"Retry-After": "7"}))

    err = _raises(lambda: make_provider(MODELS[name]).complete(_user()))

    assert err.type == "LLMRateLimited"
    assert not err.non_retryable
    assert err.next_retry_delay == timedelta(seconds=7)
    assert "slow down" in err.message
    assert len(fake.requests) == 1  # the SDK did not retry on its own


@pytest.mark.parametrize("name", PROVIDERS)
def test_server_error_is_retryable(fake: FakeLLMServer, name: str) -> None:
    fake.push(name, Error(500, "Internal error, please retry."))

    err = _raises(lambda: make_provider(MODELS[name]).complete(_user()))

    assert err.type == "LLMServerError"
    assert not err.non_retryable
    assert err.next_retry_delay is None
    assert len(fake.requests) == 1


@pytest.mark.parametrize("name", PROVIDERS)
def test_timeout_is_retryable(
    fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("POLICYFORGE_LLM_TIMEOUT_S", "1")
    fake.push(name, Hang(4))

    err = _raises(lambda: make_provider(MODELS[name]).complete(_user()))

    assert err.type == "LLMTimeout"
    assert not err.non_retryable
    assert len(fake.requests) == 1


@pytest.mark.parametrize("name", PROVIDERS)
def test_bad_key_names_the_variable_and_hides_the_key(fake: FakeLLMServer, name: str) -> None:
    fake.push(name, Error(401, "invalid x-api-key"))
    var, secret = KEYS[name]

    err = _raises(lambda: make_provider(MODELS[name]).complete(_user()))

    assert err.type == "LLMAuthError"
    assert err.non_retryable
    assert var in err.message and "invalid x-api-key" in err.message
    assert name in err.message
    assert secret not in str(err) and secret not in err.message
    assert "\n" not in err.message


@pytest.mark.parametrize("name", PROVIDERS)
def test_bad_request_carries_the_provider_message(fake: FakeLLMServer, name: str) -> None:
    fake.push(name, Error(400, "messages.0.content: field required"))

    err = _raises(lambda: make_provider(MODELS[name]).complete(_user()))

    assert err.type == "LLMInvalidRequest"
    assert err.non_retryable
    assert "messages.0.content: field required" in err.message


# --- provider specifics -----------------------------------------------------------------------


def test_anthropic_sends_bearer_auth_and_no_sampling_params(fake: FakeLLMServer) -> None:
    fake.push("anthropic", Text("ok"))
    make_provider(MODELS["anthropic"]).complete(_user(), temperature=0.3, max_tokens=99)
    (req,) = fake.requests
    # SDK 2.x: API version 2026-10-21 rejects temperature/top_p/top_k, and keys go as Bearer.
    assert req.headers["anthropic-version"] == "2026-10-21"
    assert req.headers["authorization"] == f"Bearer {KEYS['anthropic'][1]}"
    assert "temperature" not in req.body
    assert req.body["max_tokens"] == 99


def test_anthropic_overloaded_529_is_a_server_error(fake: FakeLLMServer) -> None:
    fake.push("anthropic", Error(529, "Overloaded", headers={"retry-after-ms": "2500"}))
    err = _raises(lambda: make_provider(MODELS["anthropic"]).complete(_user()))
    assert err.type == "LLMServerError" and not err.non_retryable
    assert err.next_retry_delay == timedelta(seconds=2.5)


def test_anthropic_merges_tool_results_and_user_text_into_one_turn(fake: FakeLLMServer) -> None:
    fake.push("anthropic", Text("ok"))
    call = ToolCall("toolu_1", "get_weather", {"city": "Oslo"})
    make_provider(MODELS["anthropic"]).complete(
        [
            Message(role="user", content="Weather?"),
            Message(role="assistant", tool_calls=(call,)),
            Message(role="tool", tool_results=(ToolResult("toolu_1", "boom", is_error=True),)),
            Message(role="user", content="Try again."),
        ]
    )
    last = fake.requests[0].body["messages"][-1]
    assert [b["type"] for b in last["content"]] == ["tool_result", "text"]
    assert last["content"][0]["is_error"] is True


@pytest.mark.parametrize(
    ("model", "expects_temperature"),
    [("gpt-5", False), ("o3-mini", False), ("o4-mini", False), ("gpt-4o", True)],
)
def test_openai_temperature_only_for_models_that_take_it(
    fake: FakeLLMServer, model: str, expects_temperature: bool
) -> None:
    fake.push("openai", Text("ok"))
    make_provider(model).complete(_user(), temperature=0.0, max_tokens=50)
    body = fake.requests[0].body
    assert ("temperature" in body) is expects_temperature
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body


def test_openai_insufficient_quota_is_not_retried(fake: FakeLLMServer) -> None:
    fake.push("openai", Error(429, "You exceeded your current quota.", code="insufficient_quota"))
    err = _raises(lambda: make_provider("gpt-5").complete(_user()))
    assert err.type == "LLMRateLimited" and err.non_retryable
    assert "OPENAI_API_KEY" in err.message


def test_openai_404_says_unknown_model(fake: FakeLLMServer) -> None:
    fake.push("openai", Error(404, "The model `gpt-9` does not exist."))
    err = _raises(lambda: make_provider("gpt-9").complete(_user()))
    assert err.type == "LLMInvalidRequest" and err.non_retryable
    assert "unknown model 'gpt-9'" in err.message and "does not exist" in err.message


def test_openai_compatible_root_url_placeholder_key_and_max_tokens(
    fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLICYFORGE_OPENAI_BASE_URL", fake.url)  # no /v1, as some servers take
    monkeypatch.delenv("POLICYFORGE_OPENAI_API_KEY")
    fake.push("openai-compatible", Text("local answer"))

    c = make_provider("openai-compatible:qwen2.5-coder").complete(_user(), temperature=0.2)

    assert c.text == "local answer"
    (req,) = fake.requests
    assert req.path == "/chat/completions"
    assert req.headers["authorization"] == "Bearer not-needed"
    assert req.body["model"] == "qwen2.5-coder"
    assert req.body["temperature"] == 0.2 and "max_completion_tokens" not in req.body
    assert req.body["max_tokens"] == 4096


def test_gemini_sends_key_header_and_generation_config(fake: FakeLLMServer) -> None:
    fake.push("gemini", Text("ok", stop="max_tokens"))
    c = make_provider("gemini-2.5-pro").complete(_user(), temperature=0.0, max_tokens=77)
    assert c.stop_reason == "max_tokens"
    (req,) = fake.requests
    assert req.path == "/v1beta/models/gemini-2.5-pro:generateContent"
    assert req.headers["x-goog-api-key"] == KEYS["gemini"][1]
    config = _gemini_get(req.body, "generationConfig", "generation_config")
    assert config["temperature"] == 0.0
    assert _gemini_get(config, "maxOutputTokens", "max_output_tokens") == 77


def test_gemini_accepts_video(fake: FakeLLMServer) -> None:
    fake.push("gemini", Text("A robot walks."))
    video = Media("video/mp4", b"\x00\x00\x00\x18ftypmp42")
    provider = make_provider("gemini-2.5-pro")
    assert provider.accepts_media == frozenset({"image", "video"})
    provider.complete(_user("Describe the clip.", (video,)))
    sent = _images_sent("gemini", fake.requests[0].body)
    assert sent == [("video/mp4", video.data)]


def test_gemini_google_api_key_alone_is_enough(
    fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaOther-0000111122223333")
    fake.push("gemini", Text("ok"))
    make_provider("gemini-2.5-flash").complete(_user())
    assert fake.requests[0].headers["x-goog-api-key"] == "AIzaOther-0000111122223333"


def test_gemini_invalid_key_400_is_an_auth_error(fake: FakeLLMServer) -> None:
    # What the real Gemini API answers to a bad key: 400 INVALID_ARGUMENT, not 401.
    fake.push("gemini", Error(400, "API key not valid. Please pass a valid API key."))
    err = _raises(lambda: make_provider("gemini-2.5-pro").complete(_user()))
    assert err.type == "LLMAuthError" and err.non_retryable
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in err.message
    assert KEYS["gemini"][1] not in err.message


@pytest.mark.parametrize("name", ["anthropic", "openai", "openai-compatible"])
def test_video_is_refused_before_any_request(fake: FakeLLMServer, name: str) -> None:
    provider = make_provider(MODELS[name])
    assert "video" not in provider.accepts_media
    err = _raises(lambda: provider.complete(_user("clip", (Media("video/mp4", b"..."),))))
    assert err.type == "LLMInvalidRequest" and err.non_retryable
    assert "video" in err.message
    assert fake.requests == []


def test_responder_answers_from_the_system_prompt(fake: FakeLLMServer) -> None:
    def answer(provider: str, body: dict[str, Any]) -> Text:
        system, user = prompt_of(provider, body)
        return Text(f"{'reviewer' if 'review' in system else 'author'}: {user}")

    fake.responder = answer
    assert make_provider("gpt-5").complete(_user("hi"), system="You review.").text == "reviewer: hi"
    gemini = make_provider("gemini-2.5-pro")
    assert gemini.complete(_user("yo"), system="You write.").text == "author: yo"
    claude = make_provider(MODELS["anthropic"])
    assert claude.complete(_user("hm"), system="You review.").text == "reviewer: hm"


def test_connection_refused_is_retryable(
    fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    err = _raises(lambda: make_provider(MODELS["anthropic"]).complete(_user()))
    assert err.type == "LLMConnectionError" and not err.non_retryable


# --- Retry-After parsing ------------------------------------------------------------------------


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after": "7"}) == timedelta(seconds=7)
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == timedelta(seconds=1.5)
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    delay = retry_after({"retry-after": later})
    assert delay is not None and timedelta(seconds=27) < delay <= timedelta(seconds=30)
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None  # past
    assert retry_after({}) is None and retry_after(None) is None
    info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}
    assert retry_after({}, {"error": {"details": [info]}}) == timedelta(seconds=12)


# --- registry -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "provider", "sent_as"),
    [
        ("claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6"),
        ("claude-haiku-4-5", "anthropic", "claude-haiku-4-5"),
        ("gpt-5", "openai", "gpt-5"),
        ("gpt-4.1-mini", "openai", "gpt-4.1-mini"),
        ("o1", "openai", "o1"),
        ("o3-mini", "openai", "o3-mini"),
        ("o4-mini", "openai", "o4-mini"),
        ("gemini-2.5-pro", "gemini", "gemini-2.5-pro"),
        ("gemini-2.0-flash", "gemini", "gemini-2.0-flash"),
        ("openai-compatible:llama3.1:8b", "openai-compatible", "llama3.1:8b"),
    ],
)
def test_resolve_routes_by_model_name(
    clean_env: pytest.MonkeyPatch, model: str, provider: str, sent_as: str
) -> None:
    clean_env.setenv("POLICYFORGE_OPENAI_BASE_URL", "http://localhost:8000/v1")
    choice = resolve(model)
    assert isinstance(choice, ProviderChoice)
    assert (choice.provider, choice.model) == (provider, sent_as)


def test_resolve_key_and_base_url_variables(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("POLICYFORGE_OPENAI_BASE_URL", "http://localhost:11434/v1")
    assert resolve("claude-sonnet-4-6") == ProviderChoice(
        "anthropic", "claude-sonnet-4-6", ("ANTHROPIC_API_KEY",), "ANTHROPIC_BASE_URL"
    )
    assert resolve("gpt-5").base_url_var == "OPENAI_BASE_URL"
    assert resolve("gemini-2.5-pro").key_vars == ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    assert resolve("gemini-2.5-pro").base_url_var == "GOOGLE_GEMINI_BASE_URL"
    compatible = resolve("openai-compatible:llama3")
    assert compatible.key_vars == ("POLICYFORGE_OPENAI_API_KEY",)
    assert compatible.base_url_var == "POLICYFORGE_OPENAI_BASE_URL"


@pytest.mark.parametrize("model", ["llama3", "mistral-large", "", "chatgpt"])
def test_unknown_model_is_invalid_input(clean_env: pytest.MonkeyPatch, model: str) -> None:
    err = _raises(lambda: resolve(model))
    assert err.type == "InvalidInput" and err.non_retryable
    assert err.message == (
        f"llm_model: unknown model {model!r}; use a claude-*, gpt-*/o*, gemini* model, "
        "openai-compatible:<model>, or offline"
    )


def test_openai_compatible_needs_a_base_url(clean_env: pytest.MonkeyPatch) -> None:
    err = _raises(lambda: resolve("openai-compatible:llama3"))
    assert err.type == "InvalidInput" and err.non_retryable
    assert "POLICYFORGE_OPENAI_BASE_URL" in err.message and "\n" not in err.message
    assert _raises(lambda: make_provider("openai-compatible:llama3")).type == "InvalidInput"


def test_missing_key_messages(clean_env: pytest.MonkeyPatch) -> None:
    assert missing_key("claude-sonnet-4-6") == (
        "set ANTHROPIC_API_KEY to use claude-sonnet-4-6 (anthropic)"
    )
    assert "OPENAI_API_KEY" in (missing_key("o3") or "")
    gemini = missing_key("gemini-2.5-pro") or ""
    assert "GEMINI_API_KEY or GOOGLE_API_KEY" in gemini
    assert missing_key("offline") is None
    clean_env.setenv("POLICYFORGE_OPENAI_BASE_URL", "http://localhost:8000/v1")
    assert missing_key("openai-compatible:llama3") is None  # local servers need no key

    clean_env.setenv("ANTHROPIC_API_KEY", "  ")  # blank does not count
    assert missing_key("claude-sonnet-4-6") is not None
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    clean_env.setenv("GOOGLE_API_KEY", "AIza-x")
    assert missing_key("claude-sonnet-4-6") is None
    assert missing_key("gemini-2.5-pro") is None


def test_make_provider_without_key_is_an_auth_error(clean_env: pytest.MonkeyPatch) -> None:
    err = _raises(lambda: make_provider("gpt-5"))
    assert err.type == "LLMAuthError" and err.non_retryable
    assert "OPENAI_API_KEY" in err.message


def test_make_provider_rejects_a_bad_timeout(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    clean_env.setenv("POLICYFORGE_LLM_TIMEOUT_S", "soon")
    err = _raises(lambda: make_provider("claude-sonnet-4-6"))
    assert err.type == "InvalidInput" and "POLICYFORGE_LLM_TIMEOUT_S" in err.message


def test_default_model_follows_the_keys(clean_env: pytest.MonkeyPatch) -> None:
    assert DEFAULT_MODELS == {
        "anthropic": "claude-sonnet-4-6",
        "openai": "gpt-5.1",
        "gemini": "gemini-2.5-pro",
    }
    assert default_model() == "offline"
    clean_env.setenv("GOOGLE_API_KEY", "AIza-x")
    assert default_model() == "gemini-2.5-pro"
    clean_env.setenv("OPENAI_API_KEY", "sk-x")
    assert default_model() == "gpt-5.1"
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    assert default_model() == "claude-sonnet-4-6"
    clean_env.setenv("POLICYFORGE_LLM_MODEL", "openai-compatible:llama3")
    assert default_model() == "openai-compatible:llama3"
