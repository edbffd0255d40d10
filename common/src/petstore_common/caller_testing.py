"""Caller tokens for tests that serve a servicer on a real gRPC server in their own process:
a key pair per issuer for the whole test run, the environment a service needs to trust them,
and channels that sign as an issuer does.

    settings = ServiceSettings.from_env(default_port=0, default_database="x", env=trusting_env())
    async with signed_channel(address) as channel: ...   # calls as the gateway
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from petstore_common.caller_gate import GATEWAY, ISSUERS
from petstore_common.caller_keys import KeyPair, generate
from petstore_common.caller_tokens import CallerSigner
from petstore_common.grpc_client import create_channel

KEYS: dict[str, KeyPair] = {issuer: generate() for issuer in ISSUERS}
"""Issuer -> its key pair, made once per process."""


def trusting_env(*issuers: str) -> dict[str, str]:
    """TRUSTED_CALLER_KEYS for a service that trusts `issuers` (every issuer when none given)."""
    chosen = issuers or tuple(ISSUERS)
    return {"TRUSTED_CALLER_KEYS": ",".join(f"{issuer}={KEYS[issuer].public}" for issuer in chosen)}


def signer(issuer: str = GATEWAY) -> CallerSigner:
    return CallerSigner(issuer, KEYS[issuer].seed)


def signed_channel(
    target: str, issuer: str = GATEWAY, services: Iterable[ServiceDescriptor] = ()
) -> grpc.aio.Channel:
    """A channel whose calls carry `issuer`'s tokens, vouching for each request's own caller,
    retrying the marked methods of `services` as the real clients do."""
    return create_channel(target, services, signer=signer(issuer))
