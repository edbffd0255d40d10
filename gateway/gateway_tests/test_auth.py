from __future__ import annotations

import jwt
import pytest

from petstore.auth.v1 import caller_pb2
from petstore_gateway.auth import ANONYMOUS, Authenticator, Principal, customer, key_id, staff
from petstore_gateway.errors import ApiError

from .backend import SESSION_SECRET
from .tokens import issue_token


class Sessions:
    """A stand-in for UserService.CheckSession."""

    def __init__(self) -> None:
        self.open: set[str] = set()
        self.calls = 0

    async def check(self, session_id: str) -> bool:
        self.calls += 1
        return session_id in self.open


@pytest.fixture
def sessions() -> Sessions:
    return Sessions()


@pytest.fixture
def authenticator(sessions: Sessions) -> Authenticator:
    return Authenticator(
        static_keys=("first-key", "second-key"),
        session_keys=SESSION_SECRET,
        check_session=sessions.check,
    )


def open_session(sessions: Sessions, **kwargs: object) -> str:
    token, _ = issue_token(7, "ann", **kwargs)  # type: ignore[arg-type]
    sessions.open.add(jwt.decode(token, options={"verify_signature": False}).get("jti", ""))
    return token


async def test_static_keys_are_accepted_without_asking_the_user_service(
    authenticator: Authenticator, sessions: Sessions
) -> None:
    principal = await authenticator.authenticate("second-key")
    assert principal == staff(key_id(b"second-key"))
    assert principal.is_staff
    assert sessions.calls == 0


def test_static_key_comparison_checks_every_key(
    authenticator: Authenticator, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[bytes] = []

    def compare(a: bytes, b: bytes) -> bool:
        compared.append(b)
        return a == b

    monkeypatch.setattr("petstore_gateway.auth.hmac.compare_digest", compare)
    assert authenticator.is_static_key("first-key")
    assert compared == [b"first-key", b"second-key"]  # no early exit on the first match


@pytest.mark.parametrize("key", [None, ""])
async def test_a_missing_key_is_401(authenticator: Authenticator, key: str | None) -> None:
    with pytest.raises(ApiError) as caught:
        await authenticator.authenticate(key)
    assert caught.value.status == 401


@pytest.mark.parametrize("key", ["first-key-and-more", "FIRST-KEY", "a.b.c", "nonsense"])
async def test_wrong_keys_are_401(authenticator: Authenticator, key: str) -> None:
    with pytest.raises(ApiError) as caught:
        await authenticator.authenticate(key)
    assert (caught.value.status, caught.value.message) == (401, "invalid api_key")


async def test_an_open_session_is_a_user_principal(authenticator: Authenticator, sessions: Sessions) -> None:
    token = open_session(sessions)
    principal = await authenticator.authenticate(token)
    assert isinstance(principal, Principal)
    assert (principal.user_id, principal.username, principal.is_staff) == (7, "ann", False)
    assert principal.caller() == caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_CUSTOMER, user_id=7)


async def test_expired_tokens_are_401(authenticator: Authenticator, sessions: Sessions) -> None:
    token = open_session(sessions, ttl_seconds=-10)
    with pytest.raises(ApiError, match="expired") as caught:
        await authenticator.authenticate(token)
    assert caught.value.status == 401


async def test_tampered_tokens_are_401(authenticator: Authenticator, sessions: Sessions) -> None:
    header, payload, signature = open_session(sessions).split(".")
    forged_payload = jwt.utils.base64url_encode(b'{"sub":"1","jti":"x","iat":1,"exp":9999999999}').decode()
    for token in (f"{header}.{forged_payload}.{signature}", f"{header}.{payload}.{signature[:-2]}AA"):
        with pytest.raises(ApiError) as caught:
            await authenticator.authenticate(token)
        assert caught.value.status == 401


async def test_tokens_signed_with_another_secret_or_alg_none_are_401(
    authenticator: Authenticator, sessions: Sessions
) -> None:
    other_secret = open_session(sessions, secret="another-secret-of-enough-length-000")
    unsigned = jwt.encode({"sub": "7", "jti": "j", "iat": 1, "exp": 9999999999}, "", algorithm="none")
    for token in (other_secret, unsigned):
        with pytest.raises(ApiError) as caught:
            await authenticator.authenticate(token)
        assert (caught.value.status, caught.value.message) == (401, "invalid api_key")


@pytest.mark.parametrize("claim", ["exp", "iat", "sub", "jti"])
async def test_tokens_missing_a_required_claim_are_401(
    authenticator: Authenticator, sessions: Sessions, claim: str
) -> None:
    with pytest.raises(ApiError) as caught:
        await authenticator.authenticate(open_session(sessions, omit=(claim,)))
    assert caught.value.status == 401


async def test_ended_sessions_are_401(authenticator: Authenticator, sessions: Sessions) -> None:
    token, _ = issue_token(7, "ann")  # valid signature, but the service says the session is closed
    with pytest.raises(ApiError, match="ended") as caught:
        await authenticator.authenticate(token)
    assert caught.value.status == 401


async def test_an_open_session_is_asked_about_every_time_an_ended_one_once(
    authenticator: Authenticator, sessions: Sessions
) -> None:
    token = open_session(sessions)
    await authenticator.authenticate(token)
    await authenticator.authenticate(token)
    assert sessions.calls == 2  # "open" is never cached: an end anywhere counts at once
    sessions.open.clear()  # logged out (or its password changed) through another gateway
    for _ in range(3):
        with pytest.raises(ApiError, match="ended"):
            await authenticator.authenticate(token)
    assert sessions.calls == 3  # sessions never reopen: "ended" is remembered


async def test_two_gateways_refuse_a_session_ended_through_either_at_once(sessions: Sessions) -> None:
    first, second = (
        Authenticator(static_keys=(), session_keys=SESSION_SECRET, check_session=sessions.check)
        for _ in range(2)
    )
    token = open_session(sessions)
    await first.authenticate(token)
    await second.authenticate(token)

    sessions.open.clear()
    first.session_ended(first.decode_session(token).session_id)  # the logout went through the first

    for gateway in (first, second):
        with pytest.raises(ApiError, match="ended"):
            await gateway.authenticate(token)


async def test_a_logout_here_takes_effect_at_once(authenticator: Authenticator, sessions: Sessions) -> None:
    token = open_session(sessions)
    await authenticator.authenticate(token)
    authenticator.session_ended(authenticator.decode_session(token).session_id)
    with pytest.raises(ApiError, match="ended"):
        await authenticator.authenticate(token)


# aiohttp hands header bytes that are not UTF-8 over as surrogates ("\udcff").
@pytest.mark.parametrize("key", ["\udcff\udcfe", "\udcff.\udcfe.\udcfd", "é.é.é"])
async def test_keys_that_are_not_ascii_are_invalid_not_a_crash(
    authenticator: Authenticator, sessions: Sessions, key: str
) -> None:
    with pytest.raises(ApiError) as caught:
        await authenticator.authenticate(key)
    assert caught.value.status == 401
    assert sessions.calls == 0


async def test_each_caller_spends_one_budget(authenticator: Authenticator, sessions: Sessions) -> None:
    # Every session of a customer is one budget, its user id's; each static key its own.
    first, second = open_session(sessions), open_session(sessions)
    assert first != second
    assert (await authenticator.authenticate(first)).budget() == "user:7"
    assert (await authenticator.authenticate(second)).budget() == "user:7"
    assert (await authenticator.authenticate("first-key")).budget() != (
        await authenticator.authenticate("second-key")
    ).budget()
    assert ANONYMOUS.budget() is None


def test_each_principal_tells_the_services_exactly_its_kind() -> None:
    assert staff("k1").caller() == caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_STAFF, staff_key_id="k1")
    assert ANONYMOUS.caller() == caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_ANONYMOUS)
    assert customer(9, "bob").caller() == caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_CUSTOMER, user_id=9)


async def test_each_static_key_is_a_staff_caller_of_its_own_named_without_the_key(
    authenticator: Authenticator,
) -> None:
    first = (await authenticator.authenticate("first-key")).caller()
    second = (await authenticator.authenticate("second-key")).caller()

    assert first.staff_key_id != second.staff_key_id
    assert len(first.staff_key_id) == 16
    assert "first-key" not in str(first)
