"""Who may call a service, checked on every call before anything else (health probes aside):
the call's caller token must be valid (petstore_common.caller_tokens), its issuer may call this
method, and the token must vouch for the very `Caller` the request carries.

ISSUERS is the one list of who signs and what each may do. The gateway may call every method on
behalf of the callers it authenticated; the order service only the pet service's methods an
order needs, on behalf of nobody (no caller, or an empty one: it is granted nothing a caller
would need); the webhook service only the pet and order services' event outboxes, on behalf of
nobody.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from prometheus_client import Counter

from petstore_common.caller_tokens import (
    BEARER,
    METADATA_KEY,
    CallerClaims,
    CallerVerifier,
    TokenRefused,
    TrustedKey,
    audience_of,
)
from petstore_common.errors import Unauthenticated
from petstore_common.grpc_client import HEALTH_METHOD_PREFIX

log = logging.getLogger(__name__)

GATEWAY = "gateway"
ORDER_SERVICE = "order-service"
WEBHOOK_SERVICE = "webhook-service"


@dataclass(frozen=True, slots=True)
class IssuerRights:
    methods: frozenset[str] | None
    """The methods ("/package.Service/Method") it may call; None: every one."""
    on_behalf_of_callers: bool
    """Whether its tokens may vouch for a caller; if not, only for no caller."""


PET_SERVICE = "/petstore.pet.v1.PetService/"
ORDER_SERVICE_METHODS = "/petstore.order.v1.OrderService/"
ISSUERS: Mapping[str, IssuerRights] = {
    GATEWAY: IssuerRights(methods=None, on_behalf_of_callers=True),
    ORDER_SERVICE: IssuerRights(
        methods=frozenset(
            PET_SERVICE + method
            for method in ("FindExistingPets", "GetPet", "ReservePet", "ReleasePet", "SellPet")
        ),
        on_behalf_of_callers=False,
    ),
    WEBHOOK_SERVICE: IssuerRights(
        methods=frozenset(
            {
                PET_SERVICE + "ReadPetEvents",
                PET_SERVICE + "AckPetEvents",
                ORDER_SERVICE_METHODS + "ReadOrderEvents",
                ORDER_SERVICE_METHODS + "AckOrderEvents",
            }
        ),
        on_behalf_of_callers=False,
    ),
}


class TokenMode(StrEnum):
    REQUIRED = "required"
    """Every call carries a valid token."""
    OPTIONAL = "optional"
    """During an upgrade from a release that signs nothing: a token present must be valid, a
    call without one is served (and counted)."""


REFUSALS = Counter(
    "grpc_server_caller_refused_total",
    "Calls refused UNAUTHENTICATED for their caller token, by method and reason.",
    ["grpc_method", "reason"],
)
UNSIGNED = Counter(
    "grpc_server_caller_unsigned_total",
    "Calls served without a caller token (CALLER_TOKENS=optional), by method.",
    ["grpc_method"],
)


class CallerGate:
    """The check every call of a service passes (see the module's docstring)."""

    def __init__(self, keys: tuple[TrustedKey, ...], mode: TokenMode = TokenMode.REQUIRED) -> None:
        unknown = {key.issuer for key in keys} - set(ISSUERS)
        if unknown:
            raise ValueError(f"unknown caller issuer(s): {', '.join(sorted(unknown))}")
        self._verifier = CallerVerifier(keys)
        self.mode = mode

    def check(self, method: str, metadata: Any, request: Any) -> None:
        """Returns when the call may go on; Unauthenticated, logged and counted, when not.
        `metadata` is the call's invocation metadata (pairs)."""
        if method.startswith(HEALTH_METHOD_PREFIX):  # probes: kubelet, health watches
            return
        try:
            self._check(method, _token_of(metadata), request)
        except TokenRefused as exc:
            REFUSALS.labels(method, exc.reason).inc()
            log.warning("caller refused", extra={"grpc_method": method, "reason": exc.reason})
            raise Unauthenticated(exc.message) from None

    def _check(self, method: str, token: str | None, request: Any) -> None:
        if token is None:
            if self.mode is TokenMode.OPTIONAL:
                UNSIGNED.labels(method).inc()
                return
            raise TokenRefused("missing", "this call needs a caller token")
        verified = self._verifier.verify(token, audience_of(method))
        rights = ISSUERS[verified.issuer]
        if rights.methods is not None and method not in rights.methods:
            raise TokenRefused("issuer_not_allowed", f"{verified.issuer} may not call this method")
        if not rights.on_behalf_of_callers and not verified.caller.empty:
            raise TokenRefused("issuer_not_allowed", f"{verified.issuer} may not call on behalf of a caller")
        requested = CallerClaims.of_request(request)
        if requested is not None and requested != verified.caller:
            raise TokenRefused(
                "caller_mismatch", "the request's caller is not the one its caller token vouches for"
            )


def _token_of(metadata: Any) -> str | None:
    """The bearer token of the call, None when it has no authorization metadata; a value that
    is not a bearer token is refused rather than taken for a missing one."""
    values = [value for key, value in metadata or () if key == METADATA_KEY]
    if not values:
        return None
    if len(values) > 1 or not isinstance(values[0], str) or not values[0].startswith(BEARER):
        raise TokenRefused("malformed", "the authorization metadata is not one bearer token")
    return values[0][len(BEARER) :]
