"""The session token format both sides import: what decodes, and what is refused."""

from __future__ import annotations

import time

import jwt
import pytest

from petstore_common import session_tokens
from petstore_common.session_tokens import ExpiredToken, InvalidToken, SessionClaims

SECRET = "test-session-secret-" + "s" * 48  # long enough for HS512 too
NOW = int(time.time())
LIFETIME = 24 * 3600
"""Tokens made at collection time must not expire before a long test run reaches them."""


def claims(**changes: object) -> dict[str, object]:
    document: dict[str, object] = {"sub": "42", "name": "ann", "jti": "a" * 32}
    document |= {"iat": NOW, "exp": NOW + LIFETIME}
    document.update(changes)
    return {key: value for key, value in document.items() if value is not None}


def test_what_is_encoded_decodes_to_the_same_claims() -> None:
    sent = SessionClaims(42, "ann", "b" * 32, NOW, NOW + LIFETIME)
    token = session_tokens.encode(sent, SECRET)
    assert jwt.get_unverified_header(token)["alg"] == "HS256"
    assert session_tokens.decode(token, SECRET) == sent


def test_an_expired_token_is_told_apart() -> None:
    token = jwt.encode(claims(iat=NOW - 120, exp=NOW - 60), SECRET, algorithm="HS256")
    with pytest.raises(ExpiredToken):
        session_tokens.decode(token, SECRET)


@pytest.mark.parametrize(
    "token",
    [
        jwt.encode(claims(), "another-secret-" + "o" * 32, algorithm="HS256"),  # not our signature
        jwt.encode(claims(), SECRET, algorithm="HS512"),  # another algorithm
        jwt.encode(claims(), "", algorithm="none"),  # unsigned
        jwt.encode(claims(sub="ann"), SECRET, algorithm="HS256"),  # a subject that is no user id
        jwt.encode(claims(jti=""), SECRET, algorithm="HS256"),  # no session id
        jwt.encode(claims(jti=None), SECRET, algorithm="HS256"),  # a required claim missing
        jwt.encode(claims(iat=None), SECRET, algorithm="HS256"),
        "é.é.é",  # not ASCII, so not a JWT
        "not-a-token",
    ],
)
def test_anything_else_is_invalid(token: str) -> None:
    with pytest.raises(InvalidToken) as refused:
        session_tokens.decode(token, SECRET)
    assert not isinstance(refused.value, ExpiredToken)
