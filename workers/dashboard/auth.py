"""Who may see sessions and steer them through the dashboard.

Bound to loopback with no token (the embedded default), only this machine reaches it, and the
Host header must name loopback too, so a web page elsewhere cannot reach it through DNS
rebinding. Anywhere else a token is required (`POLICYFORGE_DASHBOARD_TOKEN`; the dashboard
refuses to start without one): a browser signs in once with it and keeps a session cookie
(HttpOnly, SameSite=Strict, an HMAC of the token, never the token itself); scripts send
`Authorization: Bearer <token>`. Every change (the steering buttons) is a JSON POST, which a
cross-site form cannot send, and its Origin, when given, must be this dashboard.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from urllib.parse import urlsplit

from starlette.requests import Request

COOKIE = "policyforge_dashboard"
MIN_TOKEN_LENGTH = 16
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]", "::1")


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


class Gate:
    """The dashboard's access check, for one token (None: loopback only, no sign-in)."""

    def __init__(self, token: str | None) -> None:
        self.token = token
        self._cookie = (
            hmac.new(token.encode(), b"policyforge-dashboard-session", hashlib.sha256).hexdigest()
            if token
            else None
        )

    @property
    def needs_sign_in(self) -> bool:
        return self.token is not None

    def cookie_value(self) -> str:
        assert self._cookie is not None
        return self._cookie

    def token_matches(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def host_allowed(self, request: Request) -> bool:
        """Without a token, only a Host header naming loopback (DNS rebinding)."""
        if self.token is not None:
            return True
        host = request.headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
        return name in _LOOPBACK_NAMES

    def signed_in(self, request: Request) -> bool:
        if self.token is None:
            return True
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer ") and self.token_matches(header[7:].strip()):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), self.cookie_value().encode())

    def change_allowed(self, request: Request) -> str | None:
        """Why a POST that changes something is refused (None: allowed)."""
        if not request.headers.get("content-type", "").startswith("application/json"):
            return "send JSON (Content-Type: application/json)"
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host", ""):
            return f"origin {origin} is not this dashboard"
        return None
