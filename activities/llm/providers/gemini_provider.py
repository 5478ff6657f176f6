"""Google Gemini (google-genai `models.generate_content`) behind `LLMProvider`."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from google import genai
from google.genai import types

from activities.llm.providers.base import (
    Completion,
    Message,
    StopReason,
    ToolCall,
    ToolSpec,
    Usage,
)
from activities.llm.providers.errors import (
    invalid_request,
    reject_unsupported_media,
    translate_errors,
)

# v1beta: the Gemini API version with the full feature set (tools, system instructions,
# JSON-schema parameters); this SDK version defaults to v1.
API_VERSION = "v1beta"

# Gemini rarely returns call ids, and Gemini 3 requires each function call's thought signature
# back on the next turn. Both ride in our ToolCall.id, so a conversation stays self-contained
# across activities and workers: "<id>" or "<id>~<base64url signature>".
_GENERATED_ID = "gcall_"
_SIGNATURE_SEP = "~"

_STOP: dict[str, StopReason] = {
    "STOP": "end",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
}


class GeminiProvider:
    """Gemini models through google-genai; the one provider that takes video."""

    name = "gemini"
    accepts_media: frozenset[str] = frozenset({"image", "video"})

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None,
        timeout_s: float,
        *,
        key_vars: tuple[str, ...],
    ) -> None:
        self.model = model
        self._key = api_key
        self._key_vars = key_vars
        # retry_options=None means a single attempt in this SDK: Temporal owns retries.
        # vertexai=False so GOOGLE_GENAI_USE_VERTEXAI in the environment cannot reroute the call.
        self._client = genai.Client(
            vertexai=False,
            api_key=api_key,
            http_options=types.HttpOptions(
                base_url=base_url,
                api_version=API_VERSION,
                timeout=max(1, round(timeout_s * 1000)),  # milliseconds
                retry_options=None,
            ),
        )

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        tools: list[ToolSpec] | None = None,
        max_tokens: int = 4096,
        temperature: float | None = 0.0,
        thinking: bool = False,
    ) -> Completion:
        """One generate_content call; SDK errors become ApplicationErrors Temporal can act on.
        `thinking` asks nothing more: Gemini 2.5 Pro and Flash and Gemini 3 think by default (a
        dynamic budget), and their thought signatures ride in our tool call ids."""
        del thinking
        reject_unsupported_media(self.name, self.accepts_media, messages)
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            max_output_tokens=max_tokens,
            temperature=temperature,
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=t.name,
                            description=t.description,
                            # Raw JSON Schema; the OpenAPI-subset `parameters` rejects some.
                            parameters_json_schema=t.input_schema,
                        )
                        for t in tools
                    ]
                )
            ]
            if tools
            else None,
            # We pass declarations, never callables: the SDK must not try to run tools itself.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        contents = to_gemini_contents(messages)
        with translate_errors(self.name, self.model, self._key_vars, self._key):
            reply = self._client.models.generate_content(
                model=self.model, contents=contents, config=config
            )
        return _completion(reply)


def to_gemini_contents(messages: list[Message]) -> list[types.Content]:
    """Our turns as Gemini contents ("user"/"model"), consecutive roles merged."""
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    out: list[types.Content] = []
    for m in messages:
        role = "model" if m.role == "assistant" else "user"
        parts = _parts(m, names)
        if not parts:
            continue
        if out and out[-1].role == role and out[-1].parts is not None:
            out[-1].parts.extend(parts)
        else:
            out.append(types.Content(role=role, parts=parts))
    return out


def _parts(m: Message, names: dict[str, str]) -> list[types.Part]:
    parts: list[types.Part] = []
    for r in m.tool_results:
        call_id, _ = _split_id(r.tool_call_id)
        name = r.name or names.get(r.tool_call_id)
        if not name:
            raise invalid_request(
                f"gemini: tool result {r.tool_call_id!r} has no tool name and no matching call"
            )
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=call_id,
                    name=name,
                    response={"error": r.content} if r.is_error else {"output": r.content},
                )
            )
        )
    for media in m.media:
        if media.caption:  # a frame's time, right before the frame
            parts.append(types.Part(text=media.caption))
        parts.append(types.Part(inline_data=types.Blob(mime_type=media.mime_type, data=media.data)))
    if m.content:
        parts.append(types.Part(text=m.content))
    for c in m.tool_calls:
        call_id, signature = _split_id(c.id)
        parts.append(
            types.Part(
                function_call=types.FunctionCall(id=call_id, name=c.name, args=c.arguments),
                thought_signature=signature,
            )
        )
    return parts


def _join_id(call_id: str | None, signature: bytes | None) -> str:
    base = call_id or f"{_GENERATED_ID}{uuid.uuid4().hex[:12]}"
    if not signature:
        return base
    return base + _SIGNATURE_SEP + base64.urlsafe_b64encode(signature).decode("ascii")


def _split_id(tool_call_id: str) -> tuple[str | None, bytes | None]:
    """(the id Gemini gave, or None if we made it up; the thought signature, if any)."""
    base, _, sig = tool_call_id.partition(_SIGNATURE_SEP)
    call_id = None if base.startswith(_GENERATED_ID) or not base else base
    return call_id, (base64.urlsafe_b64decode(sig) if sig else None)


def _completion(reply: Any) -> Completion:
    usage = _usage(reply.usage_metadata)
    model = reply.model_version or ""
    if not reply.candidates:  # the prompt itself was blocked
        return Completion(text="", usage=usage, model=model, stop_reason="refusal")
    candidate = reply.candidates[0]
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in (candidate.content.parts if candidate.content else None) or []:
        if part.function_call is not None:
            fc = part.function_call
            calls.append(
                ToolCall(
                    id=_join_id(fc.id, part.thought_signature),
                    name=fc.name or "",
                    arguments=dict(fc.args or {}),
                )
            )
        elif part.text and not part.thought:  # thought summaries are not the answer
            texts.append(part.text)
    reason = candidate.finish_reason.value if candidate.finish_reason else "STOP"
    stop: StopReason = "tool_use" if calls else _STOP.get(reason, "other")
    return Completion(
        text="".join(texts), tool_calls=tuple(calls), usage=usage, model=model, stop_reason=stop
    )


def _usage(meta: Any) -> Usage:
    if meta is None:
        return Usage()
    cached = meta.cached_content_token_count or 0
    return Usage(
        # promptTokenCount includes cached tokens; split them so the fields never overlap.
        input_tokens=(meta.prompt_token_count or 0) - cached,
        # Thinking tokens are billed as output.
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cache_read_tokens=cached,
    )
