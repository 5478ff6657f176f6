"""Provider SDK exceptions -> Temporal `ApplicationError`s: a stable `type`, a one-line message.

Transient failures (rate limits, 5xx/overloaded, timeouts, connection errors) stay retryable so
Temporal retries the activity, honouring Retry-After through `next_retry_delay`. Auth and
invalid-request errors are non-retryable: retrying cannot fix a bad key or a bad request.

SDK classes are looked up in `sys.modules` rather than imported: an exception from an SDK means
that SDK is loaded, and a missing SDK never breaks the mapping of the others.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from email.utils import parsedate_to_datetime

from temporalio.exceptions import ApplicationError

from activities.llm.providers.base import Message

RATE_LIMITED = "LLMRateLimited"
SERVER_ERROR = "LLMServerError"
TIMEOUT = "LLMTimeout"
CONNECTION_ERROR = "LLMConnectionError"
AUTH_ERROR = "LLMAuthError"
INVALID_REQUEST = "LLMInvalidRequest"

_MAX_MESSAGE = 500


def _classes(module: str, *names: str) -> tuple[type, ...]:
    mod = sys.modules.get(module)
    return tuple(c for n in names if isinstance(c := getattr(mod, n, None), type))


def one_line(text: object, secret: str | None = None) -> str:
    """Whitespace collapsed, the secret masked, long bodies cut: safe for logs and the UI."""
    s = re.sub(r"\s+", " ", str(text)).strip()
    if secret and len(secret) >= 4:
        s = s.replace(secret, "***")
    return s if len(s) <= _MAX_MESSAGE else s[: _MAX_MESSAGE - 1] + "…"


def _key_text(key_vars: Sequence[str]) -> str:
    return " or ".join(key_vars) if key_vars else "no key variable"


# --- Retry-After ----------------------------------------------------------------------------


def retry_after(headers: Mapping[str, str] | None, body: object = None) -> timedelta | None:
    """The server's requested delay: retry-after-ms, Retry-After (seconds or HTTP-date), or a
    Google RetryInfo `retryDelay` in the error body. None when absent or not in the future."""
    seconds: float | None = None
    if headers is not None:
        seconds = _float(headers.get("retry-after-ms"))
        if seconds is not None:
            seconds /= 1000
        else:
            value = headers.get("retry-after")
            seconds = _float(value)
            if seconds is None and value:
                seconds = _http_date_delay(value)
    if seconds is None:
        seconds = _google_retry_delay(body)
    if seconds is None or seconds <= 0:
        return None
    return timedelta(seconds=seconds)


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _http_date_delay(value: str) -> float | None:
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _google_retry_delay(body: object) -> float | None:
    # {"error": {"details": [{"@type": ".../google.rpc.RetryInfo", "retryDelay": "7s"}]}}
    details = _error_object(body).get("details")
    for d in details if isinstance(details, list) else ():
        if isinstance(d, dict) and str(d.get("@type", "")).endswith("RetryInfo"):
            delay = str(d.get("retryDelay", ""))
            return _float(delay[:-1]) if delay.endswith("s") else None
    return None


# --- the mapping ------------------------------------------------------------------------------


def to_application_error(
    exc: BaseException,
    *,
    provider: str,
    model: str,
    key_vars: Sequence[str] = (),
    secret: str | None = None,
) -> ApplicationError | None:
    """The `ApplicationError` for an SDK or transport exception, or None if it is not one."""
    status = _status_of(exc)
    if status is not None:
        return _from_status(
            status,
            message=one_line(_provider_message(exc) or exc, secret),
            headers=_headers_of(exc),
            body=_body_of(exc),
            provider=provider,
            model=model,
            key_vars=key_vars,
        )
    timeouts = (
        _classes("anthropic", "APITimeoutError")
        + _classes("openai", "APITimeoutError")
        + _classes("httpx2", "TimeoutException")
        + _classes("httpx", "TimeoutException")
        + (TimeoutError,)
    )
    if isinstance(exc, timeouts):
        return ApplicationError(
            f"{provider} did not answer {model} in time (POLICYFORGE_LLM_TIMEOUT_S)", type=TIMEOUT
        )
    connection = (
        _classes("anthropic", "APIConnectionError")
        + _classes("openai", "APIConnectionError")
        + _classes("httpx2", "TransportError")
        + _classes("httpx", "TransportError")
        + (ConnectionError,)
    )
    if isinstance(exc, connection):
        cause = exc.__cause__ or exc.__context__
        detail = one_line(cause or exc, secret)
        return ApplicationError(f"cannot reach {provider}: {detail}", type=CONNECTION_ERROR)
    return None


def _status_of(exc: BaseException) -> int | None:
    status_errors = _classes("anthropic", "APIStatusError") + _classes("openai", "APIStatusError")
    if status_errors and isinstance(exc, status_errors):
        status = getattr(exc, "status_code", None)  # the classes are looked up at runtime
        return int(status) if status is not None else None
    genai = _classes("google.genai.errors", "APIError")
    if genai and isinstance(exc, genai):
        code = getattr(exc, "code", None)
        return code if isinstance(code, int) else None
    return None


def _provider_message(exc: BaseException) -> str | None:
    """The provider's own error text, without the SDK's 'Error code: ... - {body}' wrapping."""
    api_message = getattr(exc, "api_message", None)  # anthropic
    if isinstance(api_message, str) and api_message:
        return api_message
    body = getattr(exc, "body", None)  # openai keeps the inner "error" object as the body
    msg = _error_object(body).get("message")
    if isinstance(msg, str) and msg:
        return msg
    if isinstance(body, str) and body.strip():
        return body
    msg = getattr(exc, "message", None)  # google.genai
    return msg if isinstance(msg, str) and msg else None


def _headers_of(exc: BaseException) -> Mapping[str, str] | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return headers if isinstance(headers, Mapping) else None


def _error_object(body: object) -> dict[str, object]:
    """The error object of a JSON error body, wrapped ({"error": {...}}) or bare; {} if none."""
    error = body.get("error", body) if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _body_of(exc: BaseException) -> object:
    genai = _classes("google.genai.errors", "APIError")
    if genai and isinstance(exc, genai):
        return getattr(exc, "details", None)  # the parsed error JSON
    return getattr(exc, "body", None)


def _from_status(
    status: int,
    *,
    message: str,
    headers: Mapping[str, str] | None,
    body: object,
    provider: str,
    model: str,
    key_vars: Sequence[str],
) -> ApplicationError:
    keys = _key_text(key_vars)
    if status == 429:
        if _is_quota_exhausted(body):
            # OpenAI's insufficient_quota is billing, not load: retrying only burns attempts.
            return ApplicationError(
                f"{provider} quota exhausted ({keys}): {message}",
                type=RATE_LIMITED,
                non_retryable=True,
            )
        return ApplicationError(
            f"{provider} rate limited (429): {message}",
            type=RATE_LIMITED,
            next_retry_delay=retry_after(headers, body),
        )
    if status >= 500 or status in (408, 409):
        kind = TIMEOUT if status == 408 else SERVER_ERROR
        return ApplicationError(
            f"{provider} server error ({status}): {message}",
            type=kind,
            next_retry_delay=retry_after(headers, body),
        )
    if status == 401 or _is_invalid_google_key(status, body, message):
        return ApplicationError(
            f"{provider} rejected the API key ({keys}): {message}",
            type=AUTH_ERROR,
            non_retryable=True,
        )
    if status == 403:
        return ApplicationError(
            f"{provider} denied access for the API key ({keys}): {message}",
            type=AUTH_ERROR,
            non_retryable=True,
        )
    if status == 404:
        return ApplicationError(
            f"{provider} returned 404, probably an unknown model {model!r}: {message}",
            type=INVALID_REQUEST,
            non_retryable=True,
        )
    return ApplicationError(
        f"{provider} rejected the request ({status}): {message}",
        type=INVALID_REQUEST,
        non_retryable=True,
    )


def _is_quota_exhausted(body: object) -> bool:
    error = _error_object(body)
    return "insufficient_quota" in (error.get("code"), error.get("type"))


def _is_invalid_google_key(status: int, body: object, message: str) -> bool:
    # Gemini answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    return status == 400 and ("API_KEY_INVALID" in str(body) or "API key not valid" in message)


@contextmanager
def translate_errors(
    provider: str, model: str, key_vars: Sequence[str] = (), secret: str | None = None
) -> Iterator[None]:
    """Re-raise SDK/transport exceptions inside the block as mapped `ApplicationError`s."""
    try:
        yield
    except ApplicationError:
        raise
    except Exception as exc:
        mapped = to_application_error(
            exc, provider=provider, model=model, key_vars=key_vars, secret=secret
        )
        if mapped is None:
            raise
        # No chained cause: SDK exception text may echo request details; the message suffices.
        raise mapped from None


def reject_unsupported_media(
    provider: str, accepts: Iterable[str], messages: Sequence[Message]
) -> None:
    """Fail before any network call when a message carries media this provider cannot take."""
    allowed = frozenset(accepts)
    for m in messages:
        for media in m.media:
            if media.kind not in allowed:
                supported = ", ".join(sorted(allowed)) or "none"
                raise invalid_request(
                    f"{provider} does not accept {media.kind} input ({media.mime_type}); "
                    f"supported media: {supported}"
                )


def invalid_request(message: str) -> ApplicationError:
    """A non-retryable error for a request the provider would refuse as it stands."""
    return ApplicationError(one_line(message), type=INVALID_REQUEST, non_retryable=True)
