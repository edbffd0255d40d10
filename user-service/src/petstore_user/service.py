"""Wires the user service together: picks its store, prepares it, describes it to the server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
from pymongo.errors import PyMongoError

from petstore.user.v1 import user_service_pb2_grpc
from petstore_common.grpc_server import ServiceDefinition
from petstore_common.mongo import create_client
from petstore_common.settings import ServiceSettings
from petstore_user.passwords import Passwords
from petstore_user.servicer import UserServicer
from petstore_user.sessions import SessionTokens
from petstore_user.storage.base import UserStore
from petstore_user.storage.memory import MemoryUserStore
from petstore_user.storage.mongo import MongoUserStore

SERVICE_NAME = "petstore.user.v1.UserService"

log = logging.getLogger(__name__)


class _Readiness:
    """Ready when the store answers and its indexes exist (retried if the start-up try failed).

    Without the unique username index, racing sign-ups could store one name twice: the
    service reports NOT_SERVING until the index is there.
    """

    def __init__(self, store: UserStore, *, indexed: bool) -> None:
        self._store = store
        self._indexed = indexed

    async def check(self) -> None:
        await self._store.ping()
        if not self._indexed:
            await self._store.ensure_indexes()
            self._indexed = True


def build_definition(
    store: UserStore, passwords: Passwords, tokens: SessionTokens, *, indexed: bool = True
) -> ServiceDefinition:
    """The user service over `store`, for the shared server (tests use it with any store)."""
    servicer = UserServicer(store, passwords, tokens)

    def register(server: grpc.aio.Server) -> None:
        user_service_pb2_grpc.add_UserServiceServicer_to_server(servicer, server)

    return ServiceDefinition(SERVICE_NAME, register, _Readiness(store, indexed=indexed).check)


@asynccontextmanager
async def user_service(
    settings: ServiceSettings, *, tokens: SessionTokens
) -> AsyncIterator[ServiceDefinition]:
    """MongoDB when settings.mongodb_uri is set, else the in-memory store; closes what it opened.

    `serve` hands over the shared settings; the session signer comes from the caller
    (functools.partial), as ServiceSettings knows nothing of sessions.
    """
    passwords = Passwords()
    try:
        if not settings.mongodb_uri:
            log.info("using the in-memory store", extra={"store": "memory"})
            yield build_definition(MemoryUserStore(), passwords, tokens)
            return
        client = create_client(settings)
        try:
            store = MongoUserStore(client[settings.database])
            try:
                await store.ensure_indexes()
                indexed = True
            except PyMongoError as exc:
                # Start anyway: health reports NOT_SERVING until the database answers.
                log.warning("could not create indexes yet", extra={"error": type(exc).__name__})
                indexed = False
            log.info("using MongoDB", extra={"store": "mongo", "database": settings.database})
            yield build_definition(store, passwords, tokens, indexed=indexed)
        finally:
            await client.close()
    finally:
        passwords.close()
