"""The session token format both sides import: what decodes, and what is refused."""

from __future__ import annotations

import json
import time

import jwt
import pytest

from petstore_common import session_tokens
from petstore_common.session_tokens import ExpiredToken, InvalidToken, SessionClaims, SessionKeys, key_id

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


# -- Rotation: the current secret signs, previous ones still verify, removed ones do not --

OLD = "old-session-secret-" + "o" * 32
OLDER = "older-session-secret-" + "p" * 32
ROTATED = SessionKeys(SECRET, (OLD,))
SESSION = SessionClaims(7, "bo", "c" * 32, NOW, NOW + LIFETIME)


def signed(secret: str, *, kid: object = None, **changes: object) -> str:
    headers = None if kid is None else {"kid": kid}
    return jwt.encode(claims(**changes), secret, algorithm="HS256", headers=headers)


def with_header(token: str, header: dict[str, object]) -> str:
    """`token` with another header (PyJWT refuses to sign some), signed as it was."""
    _, payload, signature = token.split(".")
    return f"{jwt.utils.base64url_encode(json.dumps(header).encode()).decode()}.{payload}.{signature}"


def test_new_tokens_name_their_secret_by_a_digest_never_the_secret() -> None:
    token = session_tokens.encode(SESSION, ROTATED)
    kid = jwt.get_unverified_header(token)["kid"]
    assert kid == key_id(SECRET) != key_id(OLD)
    assert len(kid) == 8
    assert int(kid, 16) >= 0
    assert SECRET not in token
    assert kid not in SECRET


def test_a_release_that_ignores_kids_verifies_new_tokens_with_the_same_secret() -> None:
    """The 1.0.0 gateway and user service decode exactly so (PyJWT ignores the kid header)."""
    token = session_tokens.encode(SESSION, ROTATED)
    document = jwt.decode(
        token, SECRET, algorithms=["HS256"], options={"require": ["exp", "iat", "sub", "jti"]}
    )
    assert (document["sub"], document["jti"]) == ("7", "c" * 32)


@pytest.mark.parametrize(
    "token",
    [
        signed(SECRET, kid=key_id(SECRET)),  # the current secret, named
        signed(OLD, kid=key_id(OLD)),  # a previous secret, named
        signed(SECRET),  # no kid (a release from before kids): tried against each
        signed(OLD),
    ],
)
def test_the_current_and_previous_secrets_verify(token: str) -> None:
    assert session_tokens.decode(token, ROTATED).user_id == 42


@pytest.mark.parametrize(
    "token",
    [
        signed(OLDER, kid=key_id(OLDER)),  # a secret since removed from the list
        signed(OLDER),  # the same without a kid
        signed(SECRET, kid="deadbeef"),  # a kid that names no secret of ours
        signed(SECRET, kid=""),
        with_header(signed(SECRET), {"alg": "HS256", "kid": 7}),  # a kid that is no string
        signed(SECRET, kid=SECRET),  # the secret itself is no kid
        signed(SECRET, kid=key_id(OLD)),  # a kid naming another secret than the one that signed
        signed(OLDER, kid=key_id(SECRET)),  # a removed secret claiming to be the current one
        signed(OLDER, kid=key_id(OLDER), iat=NOW - 120, exp=NOW - 60),  # removed, and expired
    ],
)
def test_a_secret_not_in_the_list_is_refused(token: str) -> None:
    with pytest.raises(InvalidToken) as refused:
        session_tokens.decode(token, ROTATED)
    assert not isinstance(refused.value, ExpiredToken)  # nothing of a foreign token is believed


def test_a_tampered_token_is_refused_whichever_secret_signed_it() -> None:
    for secret in (SECRET, OLD):
        header, payload, signature = session_tokens.encode(SESSION, SessionKeys(secret)).split(".")
        forged = jwt.utils.base64url_encode(jwt.utils.base64url_decode(payload).replace(b'"7"', b'"1"'))
        assert forged != payload.encode()
        with pytest.raises(InvalidToken):
            session_tokens.decode(f"{header}.{forged.decode()}.{signature}", ROTATED)


def test_an_expired_token_of_a_previous_secret_is_told_apart() -> None:
    with pytest.raises(ExpiredToken):
        session_tokens.decode(signed(OLD, kid=key_id(OLD), iat=NOW - 120, exp=NOW - 60), ROTATED)


def test_secrets_that_repeat_are_refused() -> None:
    with pytest.raises(ValueError, match="differ"):
        SessionKeys(SECRET, (OLD, SECRET))
    with pytest.raises(ValueError, match="differ"):
        SessionKeys(SECRET, (OLD, OLD))
    assert "o" * 32 not in repr(ROTATED)
    assert SECRET not in repr(ROTATED)
