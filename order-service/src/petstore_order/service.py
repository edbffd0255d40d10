"""Wires the order service together: picks its store, opens the pet channel, describes it
to the server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc
from pymongo.errors import PyMongoError

from petstore.order.v1 import order_service_pb2_grpc
from petstore_common.grpc_server import ServiceDefinition
from petstore_common.mongo import create_client
from petstore_order.pets import PetDirectory, grpc_pet_directory
from petstore_order.servicer import OrderServicer
from petstore_order.settings import OrderSettings
from petstore_order.storage.base import OrderStore
from petstore_order.storage.memory import MemoryOrderStore
from petstore_order.storage.mongo import MongoOrderStore

SERVICE_NAME = "petstore.order.v1.OrderService"

log = logging.getLogger(__name__)


class _Readiness:
    """Ready when the store answers and its indexes exist (retried if the start-up try failed).

    The pet service is deliberately not part of it: without it orders can still be read and
    deleted, and CreateOrder answers UNAVAILABLE by itself.
    """

    def __init__(self, store: OrderStore, *, indexed: bool) -> None:
        self._store = store
        self._indexed = indexed

    async def check(self) -> None:
        await self._store.ping()
        if not self._indexed:
            await self._store.ensure_indexes()
            self._indexed = True


def build_definition(store: OrderStore, pets: PetDirectory, *, indexed: bool = True) -> ServiceDefinition:
    """The order service over `store` and `pets`, for the shared server (tests use any of both)."""
    servicer = OrderServicer(store, pets)

    def register(server: grpc.aio.Server) -> None:
        order_service_pb2_grpc.add_OrderServiceServicer_to_server(servicer, server)

    return ServiceDefinition(SERVICE_NAME, register, _Readiness(store, indexed=indexed).check)


@asynccontextmanager
async def order_service(settings: OrderSettings) -> AsyncIterator[ServiceDefinition]:
    """MongoDB when MONGODB_URI is set, else the in-memory store; a channel to the pet
    service either way. Closes the client and the channel on exit."""
    service = settings.service
    async with grpc_pet_directory(
        settings.pet_service_addr, timeout_seconds=settings.pet_service_timeout_seconds
    ) as pets:
        if not service.mongodb_uri:
            log.info("using the in-memory store", extra={"store": "memory"})
            yield build_definition(MemoryOrderStore(), pets)
            return
        client = create_client(service)
        try:
            store = MongoOrderStore(client[service.database])
            try:
                await store.ensure_indexes()
                indexed = True
            except PyMongoError as exc:
                # Start anyway: health reports NOT_SERVING until the database answers.
                log.warning("could not create indexes yet", extra={"error": type(exc).__name__})
                indexed = False
            log.info("using MongoDB", extra={"store": "mongo", "database": service.database})
            yield build_definition(store, pets, indexed=indexed)
        finally:
            await client.close()
