"""Wires the pet service together: opens its store, describes it to the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import grpc

from petstore.pet.v1 import pet_service_pb2_grpc
from petstore_common.grpc_server import ServiceDefinition
from petstore_common.idempotency import DEFAULT_TTL_SECONDS
from petstore_common.stores import StoreReadiness, open_store
from petstore_common.watch import HEARTBEAT_SECONDS
from petstore_pet.servicer import PetServicer
from petstore_pet.settings import PetSettings
from petstore_pet.storage.base import PetStore
from petstore_pet.storage.memory import MemoryPetStore
from petstore_pet.storage.mongo import MongoPetStore
from petstore_pet.validation import REQUEST_RULES

SERVICE_NAME = "petstore.pet.v1.PetService"


def build_definition(
    store: PetStore,
    readiness: StoreReadiness | None = None,
    *,
    idempotency_ttl_seconds: float = DEFAULT_TTL_SECONDS,
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
) -> ServiceDefinition:
    """The pet service over `store`, for the shared server (tests use it with any store)."""
    servicer = PetServicer(
        store, idempotency_ttl_seconds=idempotency_ttl_seconds, heartbeat_seconds=heartbeat_seconds
    )

    def register(server: grpc.aio.Server) -> None:
        pet_service_pb2_grpc.add_PetServiceServicer_to_server(servicer, server)

    ready = readiness or StoreReadiness(store)
    return ServiceDefinition(
        SERVICE_NAME,
        register,
        ready.check,
        on_stop=store.changes.close,
        validator=REQUEST_RULES,
        database_events=ready.events,
        polled_methods=frozenset({f"/{SERVICE_NAME}/ReadPetEvents"}),  # the webhook service's reads
    )


@asynccontextmanager
async def pet_service(settings: PetSettings) -> AsyncIterator[ServiceDefinition]:
    """MongoDB when MONGODB_URI is set, else the in-memory store."""
    # Annotated so the store is typed as the service's own store protocol.
    stores: AbstractAsyncContextManager[tuple[PetStore, StoreReadiness]] = open_store(
        settings.service, memory=MemoryPetStore, mongo=MongoPetStore
    )
    async with stores as (store, readiness):
        yield build_definition(
            store, readiness, idempotency_ttl_seconds=settings.service.idempotency_ttl_seconds
        )
