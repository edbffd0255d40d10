"""Session tokens verify under the gateway's exact rules and carry the session id."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import jwt
import pytest

from petstore_common import session_tokens
from petstore_user.sessions import SessionTokens

SECRET = "test-session-secret-" + "s" * 48  # 68 bytes: long enough for HS512 too
OTHER_SECRET = "another-session-secret-" + "o" * 32
T0 = 1_900_000_000


def gateway_decode(token: str, secret: str = SECRET) -> dict[str, Any]:
    """The claims, once the gateway's decoding (the shared format's) accepted the token."""
    session_tokens.decode(token, secret)
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return claims


def test_a_token_carries_the_user_and_the_session() -> None:
    tokens = SessionTokens(SECRET, 3600)
    before = int(time.time())

    issued = tokens.issue(42, "ann")

    claims = gateway_decode(issued.token)
    assert jwt.get_unverified_header(issued.token)["alg"] == "HS256"
    assert (claims["sub"], claims["name"], claims["jti"]) == ("42", "ann", issued.session.session_id)
    assert before <= claims["iat"] <= int(time.time())
    assert claims["exp"] == claims["iat"] + 3600
    assert uuid.UUID(hex=claims["jti"]).version == 4
    assert issued.session.user_id == 42
    assert issued.session.expires_at == datetime.fromtimestamp(claims["exp"], UTC)


def test_every_login_is_its_own_session() -> None:
    tokens = SessionTokens(SECRET, 60)

    assert tokens.issue(1, "ann").session.session_id != tokens.issue(1, "ann").session.session_id


def test_the_clock_sets_issue_and_expiry() -> None:
    tokens = SessionTokens(SECRET, 90, clock=lambda: T0 + 0.75)

    issued = tokens.issue(1, "ann")

    claims = jwt.decode(issued.token, options={"verify_signature": False})
    assert (claims["iat"], claims["exp"]) == (T0, T0 + 90)
    assert tokens.now() == datetime.fromtimestamp(T0 + 0.75, UTC)


def test_the_session_id_is_read_back_from_a_valid_token() -> None:
    tokens = SessionTokens(SECRET, 60)
    issued = tokens.issue(7, "bob")

    assert tokens.session_id_of(issued.token) == issued.session.session_id


def test_an_expired_token_is_rejected_by_both_sides() -> None:
    tokens = SessionTokens(SECRET, 60, clock=lambda: time.time() - 120)
    token = tokens.issue(7, "bob").token

    with pytest.raises(session_tokens.ExpiredToken):
        gateway_decode(token)
    assert tokens.session_id_of(token) is None


def forge(claims: dict[str, Any], secret: str = SECRET, algorithm: str = "HS256") -> str:
    return jwt.encode(claims, secret, algorithm=algorithm)


def valid_claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {"sub": "7", "name": "bob", "iat": now, "exp": now + 60, "jti": "j" * 32}
    claims.update(changes)
    return {key: value for key, value in claims.items() if value is not None}


@pytest.mark.parametrize(
    "token",
    [
        "",
        "garbage",
        "a.b.c",
        forge(valid_claims(), secret=OTHER_SECRET),
        forge(valid_claims(), secret=SECRET, algorithm="HS512"),
        forge(valid_claims(jti=None)),
        forge(valid_claims(exp=None)),
        forge(valid_claims(iat=None)),
        forge(valid_claims(sub=None)),
        jwt.encode(valid_claims(), key="", algorithm="none"),
    ],
)
def test_anything_but_a_valid_token_of_ours_has_no_session(token: str) -> None:
    assert SessionTokens(SECRET, 60).session_id_of(token) is None
