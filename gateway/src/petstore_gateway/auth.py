"""Authentication: who is calling. A static key is staff, an open session from login is that
customer, no credential is anonymous. What each of them may do is decided by the service that
owns the resource, from the `Caller` this gateway puts in every request (`Principal.caller`).
The credential comes from `api_key` or `Authorization: Bearer` (credentials.py).

Session tokens are verified locally (HS256 only; exp, iat, sub and jti required). Whether the
session was ended by logout is asked of the user service, and the answer is cached for
SESSION_CACHE_SECONDS: a logout through this gateway takes effect at once, a logout through
another gateway replica within that bound.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import jwt

from petstore.auth.v1 import caller_pb2
from petstore_gateway.errors import ApiError

SESSION_CACHE_SECONDS = 2.0
SESSION_CACHE_MAX_ENTRIES = 10_000
SESSION_ALGORITHM = "HS256"

CheckSession = Callable[[str], Awaitable[bool]]
"""Asks the user service whether the session with this id (jti) is still open."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who made the request: staff (a static key), a customer (a session) or anonymous."""

    kind: caller_pb2.CallerKind.ValueType
    user_id: int | None = None
    username: str | None = None
    session_id: str | None = None
    staff_key_id: str = ""
    """Which static key: a digest of it, so each key has its own idempotency keys."""

    @property
    def is_staff(self) -> bool:
        return self.kind == caller_pb2.CALLER_KIND_STAFF

    def caller(self) -> caller_pb2.Caller:
        """The caller as the services receive it: nothing but what was authenticated here."""
        if self.user_id is None:
            return caller_pb2.Caller(kind=self.kind, staff_key_id=self.staff_key_id)
        return caller_pb2.Caller(kind=self.kind, user_id=self.user_id)


ANONYMOUS = Principal(caller_pb2.CALLER_KIND_ANONYMOUS)


def staff(key_id: str) -> Principal:
    return Principal(caller_pb2.CALLER_KIND_STAFF, staff_key_id=key_id)


def key_id(key: bytes) -> str:
    """A stable name for a static key that does not reveal it."""
    return hashlib.sha256(b"petstore static key\0" + key).hexdigest()[:16]


def customer(user_id: int, username: str = "", session_id: str | None = None) -> Principal:
    return Principal(caller_pb2.CALLER_KIND_CUSTOMER, user_id, username, session_id)


@dataclass(frozen=True, slots=True)
class SessionClaims:
    user_id: int
    username: str
    session_id: str


def missing_key() -> ApiError:
    return ApiError(401, "api_key header (or Authorization: Bearer) is required for this operation")


class SessionCache:
    """jti -> (active, when the answer goes stale); bounded, oldest dropped first."""

    def __init__(self, ttl_seconds: float, max_entries: int, clock: Callable[[], float]) -> None:
        self._ttl = ttl_seconds
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[bool, float]] = OrderedDict()

    def get(self, session_id: str) -> bool | None:
        entry = self._entries.get(session_id)
        if entry is None:
            return None
        active, stale_at = entry
        if self._clock() >= stale_at:
            del self._entries[session_id]
            return None
        return active

    def put(self, session_id: str, active: bool) -> None:
        self._entries[session_id] = (active, self._clock() + self._ttl)
        self._entries.move_to_end(session_id)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)


class Authenticator:
    def __init__(
        self,
        *,
        static_keys: tuple[str, ...],
        session_secret: str,
        check_session: CheckSession,
        cache_seconds: float = SESSION_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._static_keys = tuple(key.encode() for key in static_keys)
        self._staff = tuple(staff(key_id(key)) for key in self._static_keys)
        self._secret = session_secret
        self._check_session = check_session
        self._cache = SessionCache(cache_seconds, SESSION_CACHE_MAX_ENTRIES, clock)

    def is_static_key(self, candidate: str) -> bool:
        """Constant time per key, and every key is compared: timing tells nothing about which."""
        return self._static_key_index(candidate) is not None

    def _static_key_index(self, candidate: str) -> int | None:
        encoded = candidate.encode("utf-8", "surrogateescape")  # header bytes that were not UTF-8
        found: int | None = None
        for index, key in enumerate(self._static_keys):
            if hmac.compare_digest(encoded, key):
                found = index
        return found

    def decode_session(self, token: str) -> SessionClaims:
        """Verify signature, algorithm and expiry locally; 401 when any is wrong."""
        if not token.isascii():  # a JWT is ASCII; anything else (even undecodable bytes) is not one
            raise ApiError(401, "invalid api_key")
        try:
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=[SESSION_ALGORITHM],
                options={"require": ["exp", "iat", "sub", "jti"]},
            )
        except jwt.ExpiredSignatureError:
            raise ApiError(401, "the session has expired; log in again") from None
        except jwt.InvalidTokenError:
            raise ApiError(401, "invalid api_key") from None
        subject, session_id, username = claims.get("sub"), claims.get("jti"), claims.get("name", "")
        if not (isinstance(subject, str) and subject.isdigit() and isinstance(session_id, str)):
            raise ApiError(401, "invalid api_key")
        return SessionClaims(int(subject), username if isinstance(username, str) else "", session_id)

    def is_genuine(self, api_key: str) -> bool:
        """A static key or a session token we signed and that has not expired; checked locally,
        without asking the user service (rate limiting keys on it, so it must be cheap)."""
        if self.is_static_key(api_key):
            return True
        if api_key.count(".") != 2:
            return False
        try:
            self.decode_session(api_key)
        except ApiError:
            return False
        return True

    async def authenticate(self, api_key: str | None) -> Principal:
        if not api_key:
            raise missing_key()
        index = self._static_key_index(api_key)
        if index is not None:
            return self._staff[index]
        if api_key.count(".") != 2:  # not a JWT at all: no need to try decoding it
            raise ApiError(401, "invalid api_key")
        claims = self.decode_session(api_key)
        if not await self._is_open(claims.session_id):
            raise ApiError(401, "the session has ended; log in again")
        return customer(claims.user_id, claims.username, claims.session_id)

    async def _is_open(self, session_id: str) -> bool:
        cached = self._cache.get(session_id)
        if cached is not None:
            return cached
        active = await self._check_session(session_id)
        self._cache.put(session_id, active)
        return active

    def session_ended(self, session_id: str) -> None:
        """Logout went through this gateway: stop accepting the session at once."""
        self._cache.put(session_id, False)
