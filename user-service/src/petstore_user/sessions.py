"""Session tokens: HS256 JWTs the gateway verifies locally with the same shared secret.

Claims: sub (the user id as a string of digits), name (the username at login), iat, exp and
jti (the session id the store keeps, so Logout can end a session before it expires). The
gateway requires exp, iat, sub and jti and accepts HS256 only; so does `session_id_of`.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import jwt

from petstore_user.storage.base import Session

ALGORITHM = "HS256"
REQUIRED_CLAIMS = ("exp", "iat", "sub", "jti")
MAX_SESSION_ID_CHARS = 64
"""Longer ids are none of ours (ours are 32 hex digits): CheckSession says inactive at once."""


@dataclass(frozen=True, slots=True)
class IssuedSession:
    token: str = field(repr=False)
    """The signed token: a bearer credential, so never logged."""
    session: Session


class SessionTokens:
    """Issues signed session tokens and reads back the session id of a valid one."""

    def __init__(self, secret: str, ttl_seconds: int, *, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self._ttl_seconds = ttl_seconds
        self._clock = clock

    def digest_key(self) -> bytes:
        """A key, derived from the session secret, for HMACs of requests that hold a password
        (idempotency fingerprints): never the secret itself."""
        return hashlib.sha256(b"petstore idempotency fingerprint\0" + self._secret.encode()).digest()

    def now(self) -> datetime:
        """The clock sessions expire by (injectable for tests)."""
        return datetime.fromtimestamp(self._clock(), UTC)

    def issue(self, user_id: int, username: str) -> IssuedSession:
        issued_at = int(self._clock())
        expires_at = issued_at + self._ttl_seconds
        session_id = uuid.uuid4().hex
        claims = {
            "sub": str(user_id),
            "name": username,
            "iat": issued_at,
            "exp": expires_at,
            "jti": session_id,
        }
        token = jwt.encode(claims, self._secret, algorithm=ALGORITHM)
        return IssuedSession(token, Session(session_id, user_id, datetime.fromtimestamp(expires_at, UTC)))

    def session_id_of(self, token: str) -> str | None:
        """The jti of a token we signed that has not expired; None for anything else."""
        try:
            claims = jwt.decode(
                token, self._secret, algorithms=[ALGORITHM], options={"require": list(REQUIRED_CLAIMS)}
            )
        except jwt.InvalidTokenError:
            return None
        session_id = claims.get("jti")
        return session_id if isinstance(session_id, str) and session_id else None
