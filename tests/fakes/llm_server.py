"""A fake Anthropic / OpenAI / Gemini server that the real SDK clients talk to by base URL.

    with FakeLLMServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
        server.push("anthropic", Tools(calls=[("submit", {"x": 1})]), Text("done"))
        ...  # real SDK calls
        system, user = server.requests[-1].prompt()

Replies are scripted per provider, first in first out; when a provider's queue is empty,
`server.responder(provider, body)` answers (if set), else a 500 that says nothing was scripted.
`server.requests` records what came in, `server.responses` what went out.
`server.faults = Faults(rate=0.3)` turns a share of the answers into provider faults (429 with
retry-after, 500, 503, an answer slower than the client's timeout, a malformed body); it is off
(None) by default, and `server.faults.injected` counts what was injected, by kind.
Routes (what each SDK appends to its base URL):
  anthropic  POST /v1/messages                              base_url("anthropic") = root
  openai     POST /v1/chat/completions, POST /chat/completions
                                                            base_url("openai") = root + "/v1"
  gemini     POST /{v1beta|v1}/models/{model}:generateContent
                                                            base_url("gemini") = root
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import secrets
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, NamedTuple, Self
from urllib.parse import urlsplit

PROVIDERS = ("anthropic", "openai", "gemini")


# --- scripted replies -------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """A plain text answer. `cache_read_tokens` come on top of `input_tokens`."""

    text: str
    input_tokens: int = 12
    output_tokens: int = 7
    cache_read_tokens: int = 0
    stop: Literal["end", "max_tokens"] = "end"


@dataclass(frozen=True)
class Tools:
    """The model calls tools: `calls` is [(name, arguments)], optionally with some text."""

    calls: Sequence[tuple[str, dict[str, Any]]]
    text: str = ""
    input_tokens: int = 20
    output_tokens: int = 15
    thinking: str = ""  # Anthropic: a signed thinking block before the calls


@dataclass(frozen=True)
class Error:
    """An HTTP error with that provider's error body. `code` overrides the provider's error
    type/code/status (e.g. OpenAI's "insufficient_quota")."""

    status: int
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    code: str | None = None


@dataclass(frozen=True)
class Hang:
    """Sleep before answering (`then`, default an empty Text), to trigger client timeouts."""

    seconds: float
    then: Text | Tools | Error | Malformed | None = None


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body is not the JSON the provider's SDK expects (cut off mid-object)."""

    body: bytes = b'{"id": "msg_cut", "type": "message", "content": [{"type": "te'


FAULT_KINDS = ("429", "500", "503", "slow", "malformed")


@dataclass
class Faults:
    """Fault injection: a `rate` share of requests (drawn by a seeded RNG) get a fault instead
    of their answer, taking `kinds` in turn. "slow" answers after `slow_s` (set it beyond the
    client's timeout); "429" carries `retry-after: retry_after_s`. The same request (same body)
    is faulted at most `max_in_a_row` times in a row, so retried calls end by being answered."""

    rate: float = 0.3
    kinds: Sequence[str] = FAULT_KINDS
    seed: int = 0
    max_in_a_row: int = 2
    slow_s: float = 5.0
    retry_after_s: float = 1.0
    injected: Counter[str] = field(default_factory=Counter)
    _rng: random.Random = field(init=False, repr=False)
    _in_a_row: dict[str, int] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {FAULT_KINDS}")
        self._rng = random.Random(self.seed)

    @property
    def total(self) -> int:
        """Faults injected so far, of every kind."""
        return sum(self.injected.values())

    def pick(self, body: dict[str, Any]) -> str | None:
        """The fault kind for this request, or None to answer it (call under the server lock)."""
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        in_a_row = self._in_a_row.get(digest, 0)
        if in_a_row >= self.max_in_a_row or self._rng.random() >= self.rate:
            self._in_a_row.pop(digest, None)
            return None
        self._in_a_row[digest] = in_a_row + 1
        kind = self.kinds[self.total % len(self.kinds)]
        self.injected[kind] += 1
        return kind


Reply = Text | Tools | Error | Hang | Malformed
Responder = Callable[[str, dict[str, Any]], Reply]


class Prompt(NamedTuple):
    system: str
    user: str  # the text of the last user turn that has text


class Recorded(NamedTuple):
    provider: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]

    def prompt(self) -> Prompt:
        return prompt_of(self.provider, self.body)


# --- the server -------------------------------------------------------------------------------


class FakeLLMServer:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.responder: Responder | None = None
        self.faults: Faults | None = None
        self.requests: list[Recorded] = []
        self.responses: list[tuple[str, int, dict[str, Any]]] = []  # (provider, status, body)
        self._queues: dict[str, deque[Reply]] = {p: deque() for p in PROVIDERS}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = _HTTPServer((host, 0), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, name="fake-llm-server", daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes Hang replies
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # addresses

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def base_url(self, provider: str) -> str:
        """What to put in ANTHROPIC_BASE_URL / OPENAI_BASE_URL / POLICYFORGE_OPENAI_BASE_URL /
        GOOGLE_GEMINI_BASE_URL so that the SDK reaches this server."""
        return self.url + "/v1" if _queue_name(provider) == "openai" else self.url

    # scripting

    def push(self, provider: str, *replies: Reply) -> None:
        with self._lock:
            self._queues[_queue_name(provider)].extend(replies)

    def pending(self, provider: str) -> int:
        with self._lock:
            return len(self._queues[_queue_name(provider)])

    def requests_for(self, provider: str) -> list[Recorded]:
        name = _queue_name(provider)
        with self._lock:
            return [r for r in self.requests if r.provider == name]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.responses.clear()
            for q in self._queues.values():
                q.clear()
        self.responder = None
        self.faults = None

    # used by the handler

    def _take(self, provider: str, path: str, headers: dict[str, str], body: dict) -> Reply:
        with self._lock:
            self.requests.append(Recorded(provider, path, headers, body))
            fault = self.faults.pick(body) if self.faults is not None else None
            if fault is not None and fault != "slow":
                return _fault_reply(fault, self.faults)
            queue = self._queues[provider]
            reply = queue.popleft() if queue else None
        if reply is None:
            reply = self._answer(provider, body)
        if fault == "slow" and self.faults is not None and not isinstance(reply, Hang):
            return Hang(self.faults.slow_s, reply)
        return reply

    def _answer(self, provider: str, body: dict) -> Reply:
        if self.responder is not None:
            try:
                return self.responder(provider, body)
            except Exception as exc:  # surface a broken responder as an answer, not a hang-up
                return Error(500, f"FakeLLMServer responder failed: {exc!r}")
        return Error(500, f"FakeLLMServer: no reply scripted for {provider}")

    def _wait(self, seconds: float) -> None:
        self._closing.wait(seconds)

    def _sent(self, provider: str, status: int, body: dict[str, Any]) -> None:
        with self._lock:
            self.responses.append((provider, status, body))


def _fault_reply(kind: str, faults: Faults | None) -> Reply:
    if kind == "429":
        after = faults.retry_after_s if faults is not None else 1.0
        return Error(429, "injected fault: rate limited", headers={"retry-after": f"{after:g}"})
    if kind == "malformed":
        return Malformed()
    return Error(int(kind), f"injected fault: server error {kind}")


def _queue_name(provider: str) -> str:
    name = "openai" if provider == "openai-compatible" else provider
    if name not in PROVIDERS:
        known = ", ".join((*PROVIDERS, "openai-compatible"))
        raise ValueError(f"unknown provider {provider!r}; one of {known}")
    return name


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeLLMServer


_GEMINI_PATH = re.compile(r"^/(?:v1beta|v1)/models/(?P<model>[^/:]+):generateContent$")


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        gemini = _GEMINI_PATH.match(path)
        if path == "/v1/messages":
            provider, model = "anthropic", None
        elif path in ("/v1/chat/completions", "/chat/completions"):
            provider, model = "openai", None
        elif gemini:
            provider, model = "gemini", gemini["model"]
        else:
            self._send(404, {"error": {"message": f"FakeLLMServer: no route for POST {path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, _error_body(provider, 400, "request body is not JSON", None))
            return
        model = model or str(body.get("model", ""))
        reply = self.server.fake._take(provider, path, headers, body)
        if isinstance(reply, Hang):
            self.server.fake._wait(reply.seconds)
            reply = reply.then or Text("")
        if isinstance(reply, Malformed):
            self.server.fake._sent(
                provider, 200, {"malformed": reply.body.decode(errors="replace")}
            )
            self._send_raw(200, reply.body, {})
            return
        if isinstance(reply, Error):
            status, payload = (
                reply.status,
                _error_body(provider, reply.status, reply.message, reply.code),
            )
            headers = {_REQUEST_ID_HEADER[provider]: _id("req_"), **reply.headers}
        else:
            status, payload, headers = 200, _RENDER[provider](reply, model), {}
        self.server.fake._sent(provider, status, payload)
        self._send(status, payload, headers)

    def _send(self, status: int, payload: dict, headers: Mapping[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers)

    def _send_raw(self, status: int, data: bytes, headers: Mapping[str, str] | None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a Hang past its timeout)


_REQUEST_ID_HEADER = {"anthropic": "request-id", "openai": "x-request-id", "gemini": "x-request-id"}


def _id(prefix: str, n: int = 24) -> str:
    return prefix + secrets.token_hex(n // 2)


# --- response bodies, as each API shapes them ---------------------------------------------------


def _anthropic(reply: Text | Tools, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if isinstance(reply, Tools) and reply.thinking:
        signature = hashlib.sha256(reply.thinking.encode()).hexdigest()
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": signature})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    if isinstance(reply, Tools):
        content += [
            {"type": "tool_use", "id": _id("toolu_"), "name": name, "input": args}
            for name, args in reply.calls
        ]
        stop = "tool_use"
    else:
        stop = "end_turn" if reply.stop == "end" else "max_tokens"
    cache_read = reply.cache_read_tokens if isinstance(reply, Text) else 0
    return {
        "id": _id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cache_read,
            "output_tokens": reply.output_tokens,
            "service_tier": "standard",
        },
    }


def _openai(reply: Text | Tools, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text or None,
        "refusal": None,
        "annotations": [],
    }
    if isinstance(reply, Tools):
        message["tool_calls"] = [
            {
                "id": _id("call_"),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for name, args in reply.calls
        ]
        finish = "tool_calls"
    else:
        finish = "stop" if reply.stop == "end" else "length"
    cache_read = reply.cache_read_tokens if isinstance(reply, Text) else 0
    prompt_tokens = reply.input_tokens + cache_read  # OpenAI counts cached tokens in the prompt
    return {
        "id": _id("chatcmpl-", 28),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": prompt_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": cache_read, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": _id("fp_", 10),
    }


def _gemini(reply: Text | Tools, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
    if isinstance(reply, Tools):
        # Thinking models sign their function calls; the client must send the signature back.
        parts += [
            {
                "functionCall": {"name": name, "args": args},
                "thoughtSignature": base64.b64encode(secrets.token_bytes(24)).decode(),
            }
            for name, args in reply.calls
        ]
        finish = "STOP"  # Gemini reports STOP for function calls too
    else:
        finish = "STOP" if reply.stop == "end" else "MAX_TOKENS"
    cache_read = reply.cache_read_tokens if isinstance(reply, Text) else 0
    prompt_tokens = reply.input_tokens + cache_read  # Gemini counts cached tokens in the prompt
    usage: dict[str, Any] = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": reply.output_tokens,
        "totalTokenCount": prompt_tokens + reply.output_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt_tokens}],
    }
    if cache_read:
        usage["cachedContentTokenCount"] = cache_read
    return {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": _id("", 22),
    }


_RENDER: dict[str, Callable[[Text | Tools, str], dict[str, Any]]] = {
    "anthropic": _anthropic,
    "openai": _openai,
    "gemini": _gemini,
}

_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS = {  # status -> (type, code)
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _error_body(provider: str, status: int, message: str, code: str | None) -> dict[str, Any]:
    if provider == "anthropic":
        default = "api_error" if status >= 500 else "invalid_request_error"
        kind = code or _ANTHROPIC_ERRORS.get(status, default)
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": _id("req_"),
        }
    if provider == "openai":
        kind, default_code = _OPENAI_ERRORS.get(
            status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
        )
        return {
            "error": {"message": message, "type": kind, "param": None, "code": code or default_code}
        }
    default = "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"
    return {
        "error": {
            "code": status,
            "message": message,
            "status": code or _GOOGLE_STATUS.get(status, default),
        }
    }


# --- reading recorded requests ------------------------------------------------------------------


def prompt_of(provider: str, body: Mapping[str, Any]) -> Prompt:
    """The system prompt and the last user text of a request, whatever the provider's shape."""
    name = _queue_name(provider)
    if name == "anthropic":
        system = _text_of(body.get("system"))
        turns = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
    elif name == "openai":
        messages = body.get("messages", [])
        system = "\n".join(
            _text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        )
        turns = [m.get("content") for m in messages if m.get("role") == "user"]
    else:
        instruction = body.get("systemInstruction") or body.get("system_instruction") or {}
        system = _text_of(instruction.get("parts"))
        contents = body.get("contents", [])
        turns = [c.get("parts") for c in contents if c.get("role", "user") == "user"]
    user = next((t for t in map(_text_of, reversed(turns)) if t), "")
    return Prompt(system, user)


def _text_of(content: Any) -> str:
    """Text of a string, or of a list of blocks/parts ({"type": "text", "text"} or {"text"})."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(
        part["text"]
        for part in content
        if isinstance(part, dict)
        and isinstance(part.get("text"), str)
        and part.get("type", "text") == "text"
    )
