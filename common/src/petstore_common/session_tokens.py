"""The session token format, one definition for both sides: the user service issues tokens
(`encode`) and the gateway verifies them locally (`decode`), with the same shared secret.

A token is an HS256 JWT with the claims sub (the user id as a string of digits), name (the
username at login), iat, exp and jti (the session id the user service keeps, so Logout can end
a session before it expires). Decoding accepts HS256 only and requires exp, iat, sub and jti.

Secrets rotate without logging anyone out (docs/rotating-secrets.md): tokens are signed with
the current secret, and verified with it or with one of the previous ones (`SessionKeys`). A
token names its secret by a `kid` header, a digest of it (`key_id`), so verification tries the
one secret it names; a token without one (signed by a release from before kids) is tried
against each. A release that ignores kids still verifies these tokens: the kid is a header
field an HS256 decode does not look at.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import jwt

ALGORITHM = "HS256"
REQUIRED_CLAIMS = ("exp", "iat", "sub", "jti")
KEY_ID_HEX_DIGITS = 8
"""32 bits of a digest: enough to tell a handful of configured secrets apart, and it tells
nothing about a secret that the token's own HMAC does not already put to an offline test."""


def key_id(secret: str) -> str:
    """The kid a token signed with `secret` carries: a digest of the secret, never the secret."""
    digest = hashlib.sha256(b"petstore session key id\0" + secret.encode())
    return digest.hexdigest()[:KEY_ID_HEX_DIGITS]


@dataclass(frozen=True, slots=True)
class SessionKeys:
    """The secret new tokens are signed with, and the previous ones that still verify."""

    current: str = field(repr=False)
    previous: tuple[str, ...] = field(default=(), repr=False)
    _by_id: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id: dict[str, str] = {}
        for secret in (self.current, *self.previous):
            if key_id(secret) in by_id:
                raise ValueError("the session secrets must all differ (and differ in their key ids)")
            by_id[key_id(secret)] = secret
        object.__setattr__(self, "_by_id", by_id)

    @property
    def current_id(self) -> str:
        return key_id(self.current)

    def named(self, kid: str) -> str | None:
        """The secret whose key id is `kid`; None when it is none of these."""
        return self._by_id.get(kid)

    def all(self) -> tuple[str, ...]:
        """Every secret that verifies, the current one first."""
        return (self.current, *self.previous)


Keys = SessionKeys | str
"""A bare secret is SessionKeys(secret): the current one, nothing previous."""


def _keys(keys: Keys) -> SessionKeys:
    return keys if isinstance(keys, SessionKeys) else SessionKeys(keys)


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


def encode(claims: SessionClaims, keys: Keys) -> str:
    """A token with `claims`, signed with the current secret and naming it by its kid."""
    signing = _keys(keys)
    document = {
        "sub": str(claims.user_id),
        "name": claims.username,
        "iat": claims.issued_at,
        "exp": claims.expires_at,
        "jti": claims.session_id,
    }
    return jwt.encode(document, signing.current, algorithm=ALGORITHM, headers={"kid": signing.current_id})


def decode(token: str, keys: Keys) -> SessionClaims:
    """The claims of a valid, unexpired token signed with one of `keys`' secrets (the one its
    kid names, or any when it names none); ExpiredToken or InvalidToken otherwise."""
    if not token.isascii():  # a JWT is ASCII; anything else (even undecodable bytes) is not one
        raise InvalidToken("not a JWT")
    document = _verified(token, _candidates(token, _keys(keys)))
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


def _candidates(token: str, keys: SessionKeys) -> tuple[str, ...]:
    """The secrets a token may be signed with: the one its kid names, or every one without a
    kid (tokens of a release from before kids). A kid naming no secret of ours is refused: a
    secret that was removed, or a made-up kid."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.InvalidTokenError as exc:
        raise InvalidToken(str(exc)) from None
    if kid is None:
        return keys.all()
    secret = keys.named(kid) if isinstance(kid, str) else None
    if secret is None:
        raise InvalidToken("signed with a key that is not (or no longer) trusted")
    return (secret,)


def _verified(token: str, secrets: tuple[str, ...]) -> dict[str, Any]:
    """The claims of `token` checked with the first of `secrets` whose signature matches.
    PyJWT checks the signature before exp, so an expiry is only ever one of ours."""
    for secret in secrets:
        try:
            document: dict[str, Any] = jwt.decode(
                token, secret, algorithms=[ALGORITHM], options={"require": list(REQUIRED_CLAIMS)}
            )
        except jwt.InvalidSignatureError:
            continue
        except jwt.ExpiredSignatureError:
            raise ExpiredToken("expired") from None
        except jwt.InvalidTokenError as exc:
            raise InvalidToken(str(exc)) from None
        return document
    raise InvalidToken("not signed with a session secret of ours")
