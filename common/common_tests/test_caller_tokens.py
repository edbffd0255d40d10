"""Caller tokens, from the side of someone trying to get a forged, stale or borrowed one accepted."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import jwt
import pytest

from petstore.auth.v1 import caller_pb2
from petstore_common import caller_keys
from petstore_common.caller_tokens import (
    LEEWAY_SECONDS,
    LIFETIME_SECONDS,
    MAX_LIFETIME_SECONDS,
    CallerClaims,
    CallerSigner,
    CallerVerifier,
    TokenRefused,
    TrustedKey,
    audience_of,
)

PET = "petstore.pet.v1.PetService"
USER = "petstore.user.v1.UserService"
ALICE = CallerClaims(kind=caller_pb2.CALLER_KIND_CUSTOMER, user_id=7)
GATEWAY_KEYS = caller_keys.generate()
OTHER_KEYS = caller_keys.generate()


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def verifier(clock: Clock | None = None, **options: int) -> CallerVerifier:
    return CallerVerifier([TrustedKey("gateway", GATEWAY_KEYS.public)], clock=clock or Clock(), **options)


def refusal(verifier: CallerVerifier, token: str, audience: str = PET) -> str:
    with pytest.raises(TokenRefused) as caught:
        verifier.verify(token, audience)
    return caught.value.reason


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_signed_token_round_trips_with_its_caller() -> None:
    clock = Clock()
    token = CallerSigner("gateway", GATEWAY_KEYS.seed, clock=clock).token(PET, ALICE)

    verified = verifier(clock).verify(token, PET)

    assert (verified.issuer, verified.audience, verified.caller) == ("gateway", PET, ALICE)
    assert verified.expires_at == clock.now + LIFETIME_SECONDS
    assert jwt.get_unverified_header(token)["kid"] == caller_keys.key_id(GATEWAY_KEYS.public)


def test_the_audience_is_the_called_service() -> None:
    assert audience_of("/petstore.pet.v1.PetService/GetPet") == PET


def test_an_expired_token_is_refused_after_the_leeway() -> None:
    clock = Clock()
    token = CallerSigner("gateway", GATEWAY_KEYS.seed, clock=clock).token(PET, ALICE)
    clock.now += LIFETIME_SECONDS + LEEWAY_SECONDS + 1

    assert refusal(verifier(clock), token) == "expired"


def test_a_cached_token_expires_with_the_token() -> None:
    clock = Clock()
    check = verifier(clock)
    token = CallerSigner("gateway", GATEWAY_KEYS.seed, clock=clock).token(PET, ALICE)
    check.verify(token, PET)  # now cached
    clock.now += LIFETIME_SECONDS + LEEWAY_SECONDS + 1

    assert refusal(check, token) == "expired"


def test_a_token_for_another_service_is_refused_even_once_cached() -> None:
    clock = Clock()
    check = verifier(clock)
    token = CallerSigner("gateway", GATEWAY_KEYS.seed, clock=clock).token(USER, ALICE)

    assert refusal(check, token, PET) == "wrong_audience"
    check.verify(token, USER)
    assert refusal(check, token, PET) == "wrong_audience"


def test_a_key_trusted_for_one_issuer_cannot_sign_as_another() -> None:
    clock = Clock()
    token = CallerSigner("order-service", GATEWAY_KEYS.seed, clock=clock).token(PET)

    assert refusal(verifier(clock), token) == "wrong_issuer"


def test_an_untrusted_key_is_refused_whatever_kid_it_names() -> None:
    clock = Clock()
    own_kid = CallerSigner("gateway", OTHER_KEYS.seed, clock=clock).token(PET, ALICE)
    key = caller_keys.private_key(OTHER_KEYS.seed)
    claims = {"iss": "gateway", "aud": PET, "iat": int(clock.now), "exp": int(clock.now) + 60, "kind": 3}
    borrowed_kid = jwt.encode(
        claims, key, algorithm="EdDSA", headers={"kid": caller_keys.key_id(GATEWAY_KEYS.public)}
    )
    no_kid = jwt.encode(claims, key, algorithm="EdDSA")

    assert refusal(verifier(clock), own_kid) == "untrusted_key"
    assert refusal(verifier(clock), borrowed_kid) == "invalid"  # the signature does not match
    assert refusal(verifier(clock), no_kid) == "untrusted_key"


def test_a_tampered_token_is_refused() -> None:
    clock = Clock()
    token = CallerSigner("gateway", GATEWAY_KEYS.seed, clock=clock).token(PET, ALICE)
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["kind"] = caller_pb2.CALLER_KIND_STAFF
    forged = ".".join((header, b64(json.dumps(claims).encode()), signature))

    assert refusal(verifier(clock), forged) == "invalid"


def test_alg_none_and_hs256_keyed_with_the_public_key_are_refused() -> None:
    clock = Clock()
    kid = caller_keys.key_id(GATEWAY_KEYS.public)
    claims = {"iss": "gateway", "aud": PET, "iat": int(clock.now), "exp": int(clock.now) + 60, "kind": 3}
    unsigned = jwt.encode(claims, "", algorithm="none", headers={"kid": kid})
    signing_input = ".".join(
        (
            b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode()),
            b64(json.dumps(claims).encode()),
        )
    )
    public = caller_keys.unb64url(GATEWAY_KEYS.public, what="key")
    mac = hmac.new(public, signing_input.encode(), hashlib.sha256).digest()
    hs256 = f"{signing_input}.{b64(mac)}"

    assert refusal(verifier(clock), unsigned) == "invalid"
    assert refusal(verifier(clock), hs256) == "invalid"


def test_a_token_issued_in_the_future_is_refused() -> None:
    clock = Clock()
    token = CallerSigner("gateway", GATEWAY_KEYS.seed, clock=Clock(clock.now + LEEWAY_SECONDS + 5)).token(PET)

    assert refusal(verifier(clock), token) == "invalid"


def test_a_token_living_longer_than_the_bound_is_refused() -> None:
    clock = Clock()
    signer = CallerSigner(
        "gateway", GATEWAY_KEYS.seed, lifetime_seconds=MAX_LIFETIME_SECONDS + 1, clock=clock
    )

    assert refusal(verifier(clock), signer.token(PET, ALICE)) == "invalid"


def test_garbage_and_oversized_tokens_are_refused_before_parsing() -> None:
    assert refusal(verifier(), "not-a-jwt") == "malformed"
    assert refusal(verifier(), "a" * 5000) == "malformed"
    assert refusal(verifier(), "é.é.é") == "malformed"


def test_the_signer_reuses_a_token_for_half_its_lifetime() -> None:
    clock = Clock()
    signer = CallerSigner("gateway", GATEWAY_KEYS.seed, clock=clock)
    first = signer.token(PET, ALICE)
    clock.now += LIFETIME_SECONDS / 2 - 1
    assert signer.token(PET, ALICE) == first
    assert signer.token(USER, ALICE) != first  # another audience
    assert signer.token(PET, CallerClaims(kind=caller_pb2.CALLER_KIND_STAFF)) != first
    clock.now += 1
    assert signer.token(PET, ALICE) != first


def test_both_caches_are_bounded() -> None:
    clock = Clock()
    signer = CallerSigner("gateway", GATEWAY_KEYS.seed, cache_entries=3, clock=clock)
    check = verifier(clock, cache_entries=3)
    for user_id in range(1, 50):
        check.verify(signer.token(PET, CallerClaims(kind=2, user_id=user_id)), PET)

    assert len(signer._cache) == 3
    assert len(check._cache) == 3


def test_caller_claims_follow_the_request_message() -> None:
    from petstore.pet.v1 import pet_service_pb2

    staff = caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_STAFF, staff_key_id="k1")
    assert CallerClaims.of_request(pet_service_pb2.DeletePetRequest(id=1, caller=staff)) == CallerClaims(
        3, 0, "k1"
    )
    assert CallerClaims.of_request(pet_service_pb2.DeletePetRequest(id=1)) == CallerClaims()
    assert CallerClaims.of_request(pet_service_pb2.FindExistingPetsRequest(ids=[1])) is None
    assert CallerClaims.of_request(b"raw") is None


def test_the_key_generator_prints_a_matching_pair(capsys: pytest.CaptureFixture[str]) -> None:
    caller_keys.main()
    lines = dict(line.split("=", 1) for line in capsys.readouterr().out.splitlines())

    assert caller_keys.public_of(lines["CALLER_SIGNING_KEY"]) == lines["CALLER_PUBLIC_KEY"]


@pytest.mark.parametrize("text", ["", "short", "!!!!", b64(bytes(33))])
def test_a_key_that_is_not_32_bytes_of_base64url_is_refused(text: str) -> None:
    with pytest.raises(caller_keys.InvalidKey):
        caller_keys.private_key(text)
