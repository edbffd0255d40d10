"""Session tokens, in the format petstore_common.session_tokens defines (the gateway verifies
them with the same module and the same shared secrets): issued at login with the current
secret, and read back by Logout with the current or a previous one, so a session signed before
a rotation can still be ended."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from petstore_common import session_tokens
from petstore_common.session_tokens import Keys, SessionClaims, SessionKeys
from petstore_user.storage.base import Session

MAX_SESSION_ID_CHARS = 64
"""Longer ids are none of ours (ours are 32 hex digits): CheckSession says inactive at once."""


@dataclass(frozen=True, slots=True)
class IssuedSession:
    token: str = field(repr=False)
    """The signed token: a bearer credential, so never logged."""
    session: Session


class SessionTokens:
    """Issues signed session tokens and reads back the session id of a valid one."""

    def __init__(self, keys: Keys, ttl_seconds: int, *, clock: Callable[[], float] = time.time) -> None:
        self._keys = keys if isinstance(keys, SessionKeys) else SessionKeys(keys)
        self._ttl_seconds = ttl_seconds
        self._clock = clock

    def digest_key(self) -> bytes:
        """A key, derived from the session secret, for HMACs of requests that hold a password
        (idempotency fingerprints): never the secret itself. From the current secret, so it
        changes with a rotation (docs/rotating-secrets.md says what that costs)."""
        return hashlib.sha256(b"petstore idempotency fingerprint\0" + self._keys.current.encode()).digest()

    def source_key(self) -> bytes:
        """A key, derived from the session secret, for the digests of login sources (client
        addresses): never the secret itself, and not the fingerprints' key either."""
        return hashlib.sha256(b"petstore login source\0" + self._keys.current.encode()).digest()

    def now(self) -> datetime:
        """The clock sessions expire by (injectable for tests)."""
        return datetime.fromtimestamp(self._clock(), UTC)

    def issue(self, user_id: int, username: str) -> IssuedSession:
        issued_at = int(self._clock())
        expires_at = issued_at + self._ttl_seconds
        session_id = uuid.uuid4().hex
        token = session_tokens.encode(
            SessionClaims(user_id, username, session_id, issued_at, expires_at), self._keys
        )
        return IssuedSession(token, Session(session_id, user_id, datetime.fromtimestamp(expires_at, UTC)))

    def session_id_of(self, token: str) -> str | None:
        """The jti of a token we signed that has not expired; None for anything else."""
        try:
            return session_tokens.decode(token, self._keys).session_id
        except session_tokens.InvalidToken:
            return None
