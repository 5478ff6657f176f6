"""Who may see sessions and steer them through the dashboard.

Bound to loopback with no token (the embedded default), only this machine reaches it, and the
Host header must name loopback too, so a web page elsewhere cannot reach it through DNS
rebinding. Anywhere else a token is required (`POLICYFORGE_DASHBOARD_TOKEN`; the dashboard
refuses to start without one): a browser signs in once with it and keeps a session cookie (a
random id per sign-in that expires, ends at sign-out and when the token changes: see
`signins.py`); scripts send `Authorization: Bearer <token>`. Wrong tokens, in the form or as a
bearer, are limited per client address and per token (all addresses together), each attempt
counted before its token is compared. Every change (the steering buttons, sign-out) is a JSON
POST, which a cross-site form cannot send; its Origin (else its Referer), when given, must be
this dashboard, and so must a sign-in's, so that another site's page cannot spend a browser's
wrong tokens and lock it out.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from typing import Literal
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.types import Scope

from workers.dashboard.signins import MAX_WRONG_TOKENS_ALL, Attempts, SignIns
from workflows.contracts.shown import shown

COOKIE = "policyforge_dashboard"
MIN_TOKEN_LENGTH = 16
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")

Access = Literal["in", "out", "blocked"]  # signed in; not; too many wrong tokens to check
_ALL = "every address"  # the per-token count's one key


class AuthConfigError(ValueError):
    """The dashboard cannot be started safely as configured; one line says what to set."""


def is_loopback(host: str) -> bool:
    """Whether a bind address is reachable from this machine only."""
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_config(host: str, token: str | None) -> None:
    """Refuse (fail closed) a dashboard that anyone on the network could open."""
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise AuthConfigError(
            f"POLICYFORGE_DASHBOARD_TOKEN is {len(token)} characters; use at least "
            f"{MIN_TOKEN_LENGTH} (e.g. `openssl rand -hex 24`)"
        )
    if token is None and not is_loopback(host):
        raise AuthConfigError(
            f"the dashboard binds to {host}, which other machines reach: set "
            "POLICYFORGE_DASHBOARD_TOKEN, or bind to 127.0.0.1"
        )


def is_json(content_type: str) -> bool:
    """Whether a Content-Type is JSON's media type exactly (parameters such as charset
    allowed): `application/jsonp` or `application/json-seq` is not JSON."""
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def client_address(scope: Scope) -> str:
    """The client's address (uvicorn puts X-Forwarded-For here only from the proxies named in
    FORWARDED_ALLOW_IPS: see `server.py`)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _token_hash(token: str | None) -> str:
    return hashlib.sha256(token.encode()).hexdigest() if token else ""


class Gate:
    """The dashboard's access check, for one token (None: loopback only, no sign-in)."""

    def __init__(self, token: str | None) -> None:
        self.token = token
        self._token_hash = _token_hash(token)
        self.sign_ins = SignIns()
        self.attempts = Attempts()  # per client address
        self.all_attempts = Attempts(MAX_WRONG_TOKENS_ALL)  # per token

    @property
    def needs_sign_in(self) -> bool:
        return self.token is not None

    def change_token(self, token: str) -> None:
        """Take a new token: every sign-in made with the old one ends."""
        check_config("127.0.0.1", token)  # its length (a token is needed here anyway)
        self.token = token
        self._token_hash = _token_hash(token)
        self.all_attempts = Attempts(MAX_WRONG_TOKENS_ALL)  # guesses at the old one are moot

    def reserve(self, client: str) -> str | None:
        """Count an attempt from `client` before its token is read or compared, so that
        concurrent attempts cannot pass the limit (a right token gives it back: `release`).
        Why it is refused, unchecked and uncounted (None: go on)."""
        if self.all_attempts.blocked(_ALL):
            return "too many wrong tokens for this dashboard"
        if not self.attempts.take(client):
            return "too many wrong tokens from this address"
        self.all_attempts.failed(_ALL)
        return None

    def release(self, client: str) -> None:
        """The token of `client`'s reserved attempt was right: it is not held against it."""
        self.attempts.give_back(client)
        self.all_attempts.give_back(_ALL)

    def token_matches(self, given: str) -> bool:
        # Digests of equal length: the comparison's time tells nothing of the token.
        given_hash = hashlib.sha256(given.encode()).hexdigest()
        return self.token is not None and hmac.compare_digest(given_hash, self._token_hash)

    def sign_in(self) -> str:
        """A new sign-in's cookie value."""
        return self.sign_ins.open(self._token_hash)

    def sign_out(self, cookie: str | None) -> None:
        if cookie:
            self.sign_ins.close(cookie)

    def host_allowed(self, headers: Headers) -> bool:
        """Without a token, only a Host header naming loopback (DNS rebinding)."""
        if self.token is not None:
            return True
        host = headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
        return name in _LOOPBACK_NAMES

    def who(self, scope: Scope) -> Access:
        """Whether a request (or a WebSocket) may come in: by its sign-in cookie, or by a
        bearer token, a wrong one counted against its address like one in the form."""
        if self.token is None:
            return "in"
        headers = Headers(scope=scope)
        header = headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            client = client_address(scope)
            if self.reserve(client) is not None:
                return "blocked"
            if self.token_matches(header[7:].strip()):
                self.release(client)
                return "in"
            return "out"
        cookie = cookie_parser(headers.get("cookie", "")).get(COOKIE, "")
        return "in" if self.sign_ins.valid(cookie, self._token_hash) else "out"

    def change_allowed(self, headers: Headers) -> str | None:
        """Why a request that changes something is refused (None: allowed)."""
        if not is_json(headers.get("content-type", "")):
            return "send JSON (Content-Type: application/json)"
        return self.origin_refused(headers)

    def origin_refused(self, headers: Headers) -> str | None:
        """Why a request another site's page sent is refused (None: it names no origin, or
        this one). The Origin says, else the Referer (a browser may leave Origin out)."""
        origin = headers.get("origin") or headers.get("referer")
        if origin and urlsplit(origin).netloc != headers.get("host", ""):
            return f"origin {shown(origin, 100)} is not this dashboard"
        return None
