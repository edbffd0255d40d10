"""Wires the user service together: opens its store and password hasher, describes it to the
server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import grpc

from petstore.user.v1 import user_service_pb2_grpc
from petstore_common.grpc_server import ServiceDefinition
from petstore_common.idempotency import DEFAULT_TTL_SECONDS
from petstore_common.stores import StoreReadiness, open_store
from petstore_user.common_passwords import common_passwords
from petstore_user.passwords import Passwords, map_hash_memory_directly
from petstore_user.servicer import UserServicer
from petstore_user.sessions import SessionTokens
from petstore_user.settings import UserSettings
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

    ready = readiness or StoreReadiness(store)
    return ServiceDefinition(
        SERVICE_NAME, register, ready.check, validator=REQUEST_RULES, database_events=ready.events
    )


@asynccontextmanager
async def user_service(
    settings: UserSettings, *, tokens: SessionTokens | None = None
) -> AsyncIterator[ServiceDefinition]:
    """MongoDB when MONGODB_URI is set, else the in-memory store; closes what it opened. Session
    tokens are signed with the settings' current secret (`tokens`: another signer, for tests)."""
    map_hash_memory_directly()  # keeps the process well under its memory limit between logins
    if tokens is None:
        tokens = SessionTokens(settings.session_keys, settings.session_ttl_seconds)
    common_passwords()  # built now, not on the first sign-up
    passwords = Passwords()
    try:
        # Annotated so the store is typed as the service's own store protocol.
        stores: AbstractAsyncContextManager[tuple[UserStore, StoreReadiness]] = open_store(
            settings.service, memory=MemoryUserStore, mongo=MongoUserStore
        )
        async with stores as (store, readiness):
            yield build_definition(
                store,
                passwords,
                tokens,
                readiness,
                idempotency_ttl_seconds=settings.service.idempotency_ttl_seconds,
            )
    finally:
        passwords.close()
