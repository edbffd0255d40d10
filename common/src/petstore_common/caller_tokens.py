"""Caller tokens: each gRPC call carries who makes it as a short-lived JWT signed by the calling
deployable (the issuer), and a service believes a request's `Caller` only when such a token
vouches for it.

A token is an EdDSA (Ed25519) JWT with the header kid (petstore_common.caller_keys.key_id of the
signing key) and the claims iss (the issuer: "gateway", "order-service"), aud (the full name of
the gRPC service called, e.g. "petstore.pet.v1.PetService", so a token for one service is no use
at another), iat, exp (LIFETIME_SECONDS later) and the caller: kind (petstore.auth.v1.CallerKind
as a number), user_id and staff_key_id. It travels as `authorization: Bearer <jwt>` metadata.

Signing and verifying an Ed25519 JWT costs tens of microseconds, so both sides cache: the
signer reuses a token per (audience, caller) for half its lifetime, the verifier remembers the
tokens it verified until they expire; both caches are bounded LRUs.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from petstore.auth.v1 import caller_pb2
from petstore_common import caller_keys

ALGORITHM = "EdDSA"
LIFETIME_SECONDS = 60
"""How long a token is valid: short, so a token seen in a log or a capture is soon useless."""
MAX_LIFETIME_SECONDS = 5 * LIFETIME_SECONDS
"""exp - iat a verifier accepts at most, whatever a signer asked for."""
LEEWAY_SECONDS = 10
"""Clock skew tolerated between the signer's and the verifier's clocks."""
MAX_TOKEN_CHARS = 2048
"""Longer than any token we sign (about 350 characters): refused before parsing."""
CACHE_ENTRIES = 10_000
"""Tokens each cache holds at most (about 4 MB at most per cache)."""
METADATA_KEY = "authorization"
BEARER = "Bearer "
REQUIRED_CLAIMS = ("iss", "aud", "iat", "exp")

Clock = Callable[[], float]


def audience_of(method: str) -> str:
    """The audience of a call to `method` ("/petstore.pet.v1.PetService/GetPet"): the full
    name of the gRPC service, as both the signer and the verifier derive it."""
    return method.lstrip("/").split("/", 1)[0]


@dataclass(frozen=True, slots=True)
class CallerClaims:
    """The caller a token vouches for; all defaults is no caller at all (an empty Caller)."""

    kind: int = 0
    user_id: int = 0
    staff_key_id: str = ""

    @classmethod
    def of(cls, caller: caller_pb2.Caller) -> CallerClaims:
        return cls(int(caller.kind), int(caller.user_id), caller.staff_key_id)

    @classmethod
    def of_request(cls, request: Any) -> CallerClaims | None:
        """The request's caller, or None when its message has no `caller` field (an unset one
        is an empty caller, as the servicers read it)."""
        descriptor = getattr(request, "DESCRIPTOR", None)  # raw bytes in tests' generic handlers
        if descriptor is None or "caller" not in descriptor.fields_by_name:
            return None
        return cls.of(request.caller)

    @property
    def empty(self) -> bool:
        return self == EMPTY_CALLER


EMPTY_CALLER = CallerClaims()


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    issuer: str
    audience: str
    caller: CallerClaims
    issued_at: float
    expires_at: float


class TokenRefused(Exception):
    """Not a token this verifier accepts; `reason` is a short label fit for a metric."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


KeyT = TypeVar("KeyT")
ValueT = TypeVar("ValueT")


class ExpiringLru(Generic[KeyT, ValueT]):
    """At most `capacity` entries, the least recently used going first; an entry is gone once
    the clock passes the expiry it was stored with."""

    def __init__(self, capacity: int, clock: Clock) -> None:
        self._entries: OrderedDict[KeyT, tuple[ValueT, float]] = OrderedDict()
        self._capacity = capacity
        self._clock = clock

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: KeyT) -> ValueT | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._clock() >= entry[1]:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: KeyT, value: ValueT, expires_at: float) -> None:
        self._entries[key] = (value, expires_at)
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


class CallerSigner:
    """Signs the tokens of one issuer with its private key (a base64url Ed25519 seed)."""

    def __init__(
        self,
        issuer: str,
        seed: str,
        *,
        lifetime_seconds: int = LIFETIME_SECONDS,
        cache_entries: int = CACHE_ENTRIES,
        clock: Clock = time.time,
    ) -> None:
        self.issuer = issuer
        self._key = caller_keys.private_key(seed)
        self._kid = caller_keys.key_id(caller_keys.public_of(seed))
        self._lifetime = lifetime_seconds
        self._clock = clock
        self._cache: ExpiringLru[tuple[str, CallerClaims], str] = ExpiringLru(cache_entries, clock)

    def token(self, audience: str, caller: CallerClaims = EMPTY_CALLER) -> str:
        """A token for calls to `audience` on behalf of `caller`: a cached one while it has
        more than half its life left, else a fresh one."""
        key = (audience, caller)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        now = int(self._clock())
        token = jwt.encode(
            {
                "iss": self.issuer,
                "aud": audience,
                "iat": now,
                "exp": now + self._lifetime,
                "kind": caller.kind,
                "user_id": caller.user_id,
                "staff_key_id": caller.staff_key_id,
            },
            self._key,
            algorithm=ALGORITHM,
            headers={"kid": self._kid},
        )
        self._cache.put(key, token, now + self._lifetime / 2)
        return token

    def metadata(self, method: str, caller: CallerClaims = EMPTY_CALLER) -> tuple[str, str]:
        """The metadata entry a call to `method` carries."""
        return METADATA_KEY, BEARER + self.token(audience_of(method), caller)


@dataclass(frozen=True, slots=True)
class TrustedKey:
    issuer: str
    public: str
    """The raw Ed25519 public key, base64url."""


class CallerVerifier:
    """Accepts the tokens signed by the trusted keys, each for its own issuer only."""

    def __init__(
        self,
        keys: Iterable[TrustedKey],
        *,
        leeway_seconds: int = LEEWAY_SECONDS,
        cache_entries: int = CACHE_ENTRIES,
        clock: Clock = time.time,
    ) -> None:
        self._keys: dict[str, tuple[str, Ed25519PublicKey]] = {
            caller_keys.key_id(key.public): (key.issuer, caller_keys.public_key(key.public)) for key in keys
        }
        self._leeway = leeway_seconds
        self._clock = clock
        self._cache: ExpiringLru[str, VerifiedToken] = ExpiringLru(cache_entries, clock)

    @property
    def issuers(self) -> frozenset[str]:
        return frozenset(issuer for issuer, _ in self._keys.values())

    def verify(self, token: str, audience: str) -> VerifiedToken:
        """The verified token, if `token` is valid for calls to `audience`; TokenRefused else."""
        cached = self._cache.get(token)
        if cached is None:
            cached = self._verify(token)
            self._cache.put(token, cached, cached.expires_at)
        if cached.audience != audience:
            raise TokenRefused("wrong_audience", "the caller token is for another service")
        return cached

    def _verify(self, token: str) -> VerifiedToken:
        if len(token) > MAX_TOKEN_CHARS or not token.isascii():
            raise TokenRefused("malformed", "the caller token is not a token")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise TokenRefused("malformed", "the caller token is not a token") from None
        kid = header.get("kid")
        trusted = self._keys.get(kid) if isinstance(kid, str) else None
        if trusted is None:
            raise TokenRefused("untrusted_key", "the caller token is signed by a key not trusted here")
        issuer, key = trusted
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[ALGORITHM],
                issuer=issuer,
                # The times and the audience are checked below, against this verifier's clock.
                options={
                    "require": list(REQUIRED_CLAIMS),
                    "verify_aud": False,
                    "verify_exp": False,
                    "verify_iat": False,
                },
            )
        except jwt.InvalidIssuerError:
            raise TokenRefused(
                "wrong_issuer", "the caller token names another issuer than its key's"
            ) from None
        except jwt.InvalidTokenError:
            raise TokenRefused("invalid", "the caller token is invalid") from None
        verified = _verified(issuer, claims)
        now = self._clock()
        if now > verified.expires_at + self._leeway:
            raise TokenRefused("expired", "the caller token has expired")
        if verified.issued_at > now + self._leeway:
            raise TokenRefused("invalid", "the caller token is issued in the future")
        return verified


def _verified(issuer: str, claims: dict[str, Any]) -> VerifiedToken:
    audience, issued_at, expires_at = claims["aud"], claims["iat"], claims["exp"]
    kind, user_id, staff_key_id = (
        claims.get("kind", 0),
        claims.get("user_id", 0),
        claims.get("staff_key_id", ""),
    )
    well_formed = (
        isinstance(audience, str)
        and isinstance(issued_at, int)
        and isinstance(expires_at, int)
        and type(kind) is int
        and type(user_id) is int
        and isinstance(staff_key_id, str)
    )
    if not well_formed:
        raise TokenRefused("invalid", "the caller token's claims are malformed")
    if expires_at - issued_at > MAX_LIFETIME_SECONDS:
        raise TokenRefused("invalid", "the caller token lives too long")
    caller = CallerClaims(kind, user_id, staff_key_id)
    return VerifiedToken(issuer, audience, caller, float(issued_at), float(expires_at))
