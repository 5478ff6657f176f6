"""Who is signed in to the dashboard, and who guessed the token wrong too often.

A sign-in is a random id (the cookie) the server keeps with its expiry and the hash of the
token it was made with: a stolen cookie stops working when it expires, when its browser signs
out, or when the token changes, and no cookie says anything about the token. Token attempts are
counted over a sliding window, each one before its token is read (a right token is then given
back), so concurrent attempts cannot pass the limit; past it, tokens are not even compared until
the window has moved on.

Both live in this process's memory (one dashboard process; a restart signs everyone out) and
hold a bounded number of entries, so neither grows with what clients send.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

SIGN_IN_LIFETIME_S = 12 * 3600
MAX_SIGN_INS = 1000
MAX_WRONG_TOKENS = 10  # per client address per window
# Per token, every address together: a guesser with many addresses meets it, one never does.
MAX_WRONG_TOKENS_ALL = 100
WRONG_TOKEN_WINDOW_S = 60.0
MAX_ADDRESSES = 10_000  # addresses whose wrong tokens are remembered

Clock = Callable[[], float]


def _key(session_id: str) -> str:
    # Kept by hash: the store never holds a usable cookie, and a lookup compares no secret.
    return hashlib.sha256(session_id.encode()).hexdigest()


@dataclass
class _SignIn:
    expires: float
    token_hash: str


class SignIns:
    """The live sign-ins: random ids with an expiry, bound to the token they were made with."""

    def __init__(
        self,
        lifetime_s: float = SIGN_IN_LIFETIME_S,
        keep: int = MAX_SIGN_INS,
        clock: Clock = time.monotonic,
    ) -> None:
        self.lifetime_s = lifetime_s
        self._keep = keep
        self._clock = clock
        self._live: dict[str, _SignIn] = {}

    def open(self, token_hash: str) -> str:
        """A new sign-in's id (the cookie's value)."""
        session_id = secrets.token_urlsafe(32)
        self._live[_key(session_id)] = _SignIn(self._clock() + self.lifetime_s, token_hash)
        if len(self._live) > self._keep:
            self._forget_expired()
        while len(self._live) > self._keep:
            del self._live[next(iter(self._live))]  # the oldest (dicts keep order)
        return session_id

    def valid(self, session_id: str, token_hash: str) -> bool:
        """Whether `session_id` is a live sign-in made with the current token."""
        if not session_id:
            return False
        key = _key(session_id)
        entry = self._live.get(key)
        if entry is None:
            return False
        if entry.expires <= self._clock() or entry.token_hash != token_hash:
            del self._live[key]
            return False
        return True

    def close(self, session_id: str) -> None:
        """End one sign-in (sign-out)."""
        self._live.pop(_key(session_id), None)

    def _forget_expired(self) -> None:
        now = self._clock()
        for key in [k for k, e in self._live.items() if e.expires <= now]:
            del self._live[key]


class Attempts:
    """Wrong tokens per client address over a sliding window."""

    def __init__(
        self,
        limit: int = MAX_WRONG_TOKENS,
        window_s: float = WRONG_TOKEN_WINDOW_S,
        keep: int = MAX_ADDRESSES,
        clock: Clock = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._keep = keep
        self._clock = clock
        self._wrong: dict[str, deque[float]] = {}

    def blocked(self, client: str) -> bool:
        """Whether `client` has used up its wrong tokens for now."""
        times = self._wrong.get(client)
        if times is None:
            return False
        horizon = self._clock() - self.window_s
        while times and times[0] <= horizon:
            times.popleft()
        if not times:
            del self._wrong[client]
            return False
        return len(times) >= self.limit

    def take(self, client: str) -> bool:
        """Count one attempt from `client` before its token is compared (False: no room left,
        nothing counted). Check and count happen in one step, so no await falls between."""
        if self.blocked(client):
            return False
        self.failed(client)
        return True

    def give_back(self, client: str) -> None:
        """Uncount `client`'s newest attempt: its token was right."""
        times = self._wrong.get(client)
        if times:
            times.pop()

    def failed(self, client: str) -> None:
        """Count one wrong token from `client`."""
        times = self._wrong.pop(client, None) or deque(maxlen=self.limit)
        times.append(self._clock())
        self._wrong[client] = times  # re-inserted: the newest address is forgotten last
        while len(self._wrong) > self._keep:
            del self._wrong[next(iter(self._wrong))]
