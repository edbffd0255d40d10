"""Wires the pet service together: picks its store, prepares it, describes it to the server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
from pymongo.errors import PyMongoError

from petstore.pet.v1 import pet_service_pb2_grpc
from petstore_common.grpc_server import ServiceDefinition
from petstore_common.mongo import create_client
from petstore_common.settings import ServiceSettings
from petstore_pet.servicer import PetServicer
from petstore_pet.storage.base import PetStore
from petstore_pet.storage.memory import MemoryPetStore
from petstore_pet.storage.mongo import MongoPetStore

SERVICE_NAME = "petstore.pet.v1.PetService"

log = logging.getLogger(__name__)


class _Readiness:
    """Ready when the store answers and its indexes exist (retried if the start-up try failed)."""

    def __init__(self, store: PetStore, *, indexed: bool) -> None:
        self._store = store
        self._indexed = indexed

    async def check(self) -> None:
        await self._store.ping()
        if not self._indexed:
            await self._store.ensure_indexes()
            self._indexed = True


def build_definition(store: PetStore, *, indexed: bool = True) -> ServiceDefinition:
    """The pet service over `store`, for the shared server (tests use it with any store)."""
    servicer = PetServicer(store)

    def register(server: grpc.aio.Server) -> None:
        pet_service_pb2_grpc.add_PetServiceServicer_to_server(servicer, server)

    return ServiceDefinition(SERVICE_NAME, register, _Readiness(store, indexed=indexed).check)


@asynccontextmanager
async def pet_service(settings: ServiceSettings) -> AsyncIterator[ServiceDefinition]:
    """MongoDB when settings.mongodb_uri is set, else the in-memory store; closes the client."""
    if not settings.mongodb_uri:
        log.info("using the in-memory store", extra={"store": "memory"})
        yield build_definition(MemoryPetStore())
        return
    client = create_client(settings)
    try:
        store = MongoPetStore(client[settings.database])
        try:
            await store.ensure_indexes()
            indexed = True
        except PyMongoError as exc:
            # Start anyway: health reports NOT_SERVING until the database answers.
            log.warning("could not create indexes yet", extra={"error": type(exc).__name__})
            indexed = False
        log.info("using MongoDB", extra={"store": "mongo", "database": settings.database})
        yield build_definition(store, indexed=indexed)
    finally:
        await client.close()
