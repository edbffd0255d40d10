"""The session token format, one definition for both sides: the user service issues tokens
(`encode`) and the gateway verifies them locally (`decode`), with the same shared secret.

A token is an HS256 JWT with the claims sub (the user id as a string of digits), name (the
username at login), iat, exp and jti (the session id the user service keeps, so Logout can end
a session before it expires). Decoding accepts HS256 only and requires exp, iat, sub and jti.
"""

from __future__ import annotations

from dataclasses import dataclass

import jwt

ALGORITHM = "HS256"
REQUIRED_CLAIMS = ("exp", "iat", "sub", "jti")


@dataclass(frozen=True, slots=True)
class SessionClaims:
    user_id: int
    username: str
    session_id: str
    issued_at: int = 0
    expires_at: int = 0


class InvalidToken(Exception):
    """Not a token we signed, or not one of this format."""


class ExpiredToken(InvalidToken):
    """One of ours, past its exp."""


def encode(claims: SessionClaims, secret: str) -> str:
    document = {
        "sub": str(claims.user_id),
        "name": claims.username,
        "iat": claims.issued_at,
        "exp": claims.expires_at,
        "jti": claims.session_id,
    }
    return jwt.encode(document, secret, algorithm=ALGORITHM)


def decode(token: str, secret: str) -> SessionClaims:
    """The claims of a valid, unexpired token signed with `secret`; ExpiredToken or
    InvalidToken otherwise."""
    if not token.isascii():  # a JWT is ASCII; anything else (even undecodable bytes) is not one
        raise InvalidToken("not a JWT")
    try:
        document = jwt.decode(
            token, secret, algorithms=[ALGORITHM], options={"require": list(REQUIRED_CLAIMS)}
        )
    except jwt.ExpiredSignatureError:
        raise ExpiredToken("expired") from None
    except jwt.InvalidTokenError as exc:
        raise InvalidToken(str(exc)) from None
    subject, session_id, username = document.get("sub"), document.get("jti"), document.get("name", "")
    if not (isinstance(subject, str) and subject.isdigit() and isinstance(session_id, str) and session_id):
        raise InvalidToken("sub must be a user id and jti a session id")
    return SessionClaims(
        int(subject),
        username if isinstance(username, str) else "",
        session_id,
        int(document["iat"]),
        int(document["exp"]),
    )
