"""Session tokens made by hand: expired, forged, or missing a claim, as the user service never
issues them (a real one comes from a login: backend.Backend.login)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import jwt

from .backend import SESSION_SECRET


def issue_token(
    user_id: int,
    username: str,
    *,
    ttl_seconds: int = 3600,
    secret: str = SESSION_SECRET,
    algorithm: str = "HS256",
    omit: tuple[str, ...] = (),
) -> tuple[str, int]:
    """A token in the user service's format; `omit` drops claims to test what is required."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": str(user_id),
        "name": username,
        "iat": now,
        "exp": now + ttl_seconds,
        "jti": uuid.uuid4().hex,
    }
    for claim in omit:
        del claims[claim]
    return jwt.encode(claims, secret, algorithm=algorithm), now + ttl_seconds
