"""Authentication: who is calling. A static key is staff, an open session from login is that
customer, no credential is anonymous. What each of them may do is decided by the service that
owns the resource, from the `Caller` this gateway puts in every request (`Principal.caller`).
The credential comes from `api_key` or `Authorization: Bearer` (credentials.py).

Session tokens are verified locally (petstore_common.session_tokens, the format the user
service issues them in), with the current session secret or a previous one: a rotation logs
nobody out, and a session signed with a secret since removed is refused. Whether the
session is still open is asked of the user service on every request that presents it: no
answer "open" is ever cached, so a logout, a password change or a deletion is refused by every
gateway process and replica from the moment the user service has recorded it. Only "ended" is
remembered (a bounded set): an ended session never opens again, so a stale token costs no call.
"""

from __future__ import annotations

import hashlib
import hmac
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from petstore.auth.v1 import caller_pb2
from petstore_common import session_tokens
from petstore_common.session_tokens import Keys, SessionClaims
from petstore_gateway.errors import ApiError

ENDED_SESSIONS_MAX_ENTRIES = 10_000
"""Ended sessions remembered; one forgotten costs one more CheckSession, never a wrong answer."""

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

    def budget(self) -> str | None:
        """Whose rate budget this caller spends: its user id for a customer (all its sessions
        share one), its key for staff; None for anonymous (its address's)."""
        if self.user_id is not None:
            return f"user:{self.user_id}"
        if self.is_staff:
            return f"staff:{self.staff_key_id}"
        return None

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


def missing_key() -> ApiError:
    return ApiError(401, "api_key header (or Authorization: Bearer) is required for this operation")


class EndedSessions:
    """Session ids known to have ended; bounded, oldest dropped first."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._ids: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._ids

    def add(self, session_id: str) -> None:
        self._ids[session_id] = None
        self._ids.move_to_end(session_id)
        while len(self._ids) > self._max:
            self._ids.popitem(last=False)


class Authenticator:
    def __init__(
        self,
        *,
        static_keys: tuple[str, ...],
        session_keys: Keys,
        check_session: CheckSession,
    ) -> None:
        self._static_keys = tuple(key.encode() for key in static_keys)
        self._staff = tuple(staff(key_id(key)) for key in self._static_keys)
        self._session_keys = session_keys
        self._check_session = check_session
        self._ended = EndedSessions(ENDED_SESSIONS_MAX_ENTRIES)

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
        try:
            return session_tokens.decode(token, self._session_keys)
        except session_tokens.ExpiredToken:
            raise ApiError(401, "the session has expired; log in again") from None
        except session_tokens.InvalidToken:
            raise ApiError(401, "invalid api_key") from None

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
        if session_id in self._ended:
            return False
        active = await self._check_session(session_id)
        if not active:
            self._ended.add(session_id)
        return active

    def session_ended(self, session_id: str) -> None:
        """Logout went through this gateway: no need to ask about the session again."""
        self._ended.add(session_id)


_AUTHENTICATED = web.RequestKey("authenticated", object)
"""The outcome of authenticating a request's credential: a Principal or the ApiError."""


async def authenticate_request(
    request: web.Request, authenticator: Authenticator, credential: str
) -> Principal:
    """`authenticator.authenticate(credential)`, done once per request: the rate limit and the
    access check both need it, and the session check is a call to the user service."""
    outcome = request.get(_AUTHENTICATED)
    if outcome is None:
        try:
            outcome = await authenticator.authenticate(credential)
        except ApiError as exc:
            outcome = exc
        request[_AUTHENTICATED] = outcome
    if isinstance(outcome, ApiError):
        raise outcome
    assert isinstance(outcome, Principal)
    return outcome
