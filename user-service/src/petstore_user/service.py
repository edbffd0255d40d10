"""Wires the user service together: opens its store and password hasher, describes it to the
server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import grpc

from petstore.user.v1 import user_service_pb2_grpc
from petstore_common.grpc_server import ServiceDefinition
from petstore_common.idempotency import DEFAULT_TTL_SECONDS
from petstore_common.settings import ServiceSettings
from petstore_common.stores import StoreReadiness, open_store
from petstore_user.common_passwords import common_passwords
from petstore_user.passwords import Passwords
from petstore_user.servicer import UserServicer
from petstore_user.sessions import SessionTokens
from petstore_user.storage.base import UserStore
from petstore_user.storage.memory import MemoryUserStore
from petstore_user.storage.mongo import MongoUserStore
from petstore_user.validation import REQUEST_RULES

SERVICE_NAME = "petstore.user.v1.UserService"


def build_definition(
    store: UserStore,
    passwords: Passwords,
    tokens: SessionTokens,
    readiness: StoreReadiness | None = None,
    *,
    idempotency_ttl_seconds: float = DEFAULT_TTL_SECONDS,
) -> ServiceDefinition:
    """The user service over `store`, for the shared server (tests use it with any store)."""
    servicer = UserServicer(store, passwords, tokens, idempotency_ttl_seconds=idempotency_ttl_seconds)

    def register(server: grpc.aio.Server) -> None:
        user_service_pb2_grpc.add_UserServiceServicer_to_server(servicer, server)

    return ServiceDefinition(
        SERVICE_NAME, register, (readiness or StoreReadiness(store)).check, validator=REQUEST_RULES
    )


@asynccontextmanager
async def user_service(
    settings: ServiceSettings, *, tokens: SessionTokens
) -> AsyncIterator[ServiceDefinition]:
    """MongoDB when settings.mongodb_uri is set, else the in-memory store; closes what it opened.

    `serve` hands over the shared settings; the session signer comes from the caller
    (functools.partial), as ServiceSettings knows nothing of sessions.
    """
    common_passwords()  # built now, not on the first sign-up
    passwords = Passwords()
    try:
        # Annotated so the store is typed as the service's own store protocol.
        stores: AbstractAsyncContextManager[tuple[UserStore, StoreReadiness]] = open_store(
            settings, memory=MemoryUserStore, mongo=MongoUserStore
        )
        async with stores as (store, readiness):
            yield build_definition(
                store, passwords, tokens, readiness, idempotency_ttl_seconds=settings.idempotency_ttl_seconds
            )
    finally:
        passwords.close()
