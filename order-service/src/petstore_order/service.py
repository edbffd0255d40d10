"""Wires the order service together: opens its store and the pet channel, describes it to
the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import grpc

from petstore.order.v1 import order_service_pb2_grpc
from petstore_common.caller_gate import ORDER_SERVICE
from petstore_common.caller_tokens import CallerSigner
from petstore_common.grpc_server import ServiceDefinition
from petstore_common.idempotency import DEFAULT_TTL_SECONDS
from petstore_common.stores import StoreReadiness, open_store
from petstore_order.pets import PetDirectory, grpc_pet_directory
from petstore_order.sale import DEFAULT_RECOVER_AFTER_SECONDS, DEFAULT_RECOVERY_INTERVAL_SECONDS, Sale
from petstore_order.servicer import DEFAULT_MAX_OPEN_ORDERS, OrderServicer
from petstore_order.settings import OrderSettings
from petstore_order.storage.base import OrderStore
from petstore_order.storage.memory import MemoryOrderStore
from petstore_order.storage.mongo import MongoOrderStore
from petstore_order.validation import REQUEST_RULES

SERVICE_NAME = "petstore.order.v1.OrderService"


def build_definition(
    store: OrderStore,
    pets: PetDirectory,
    readiness: StoreReadiness | None = None,
    *,
    idempotency_ttl_seconds: float = DEFAULT_TTL_SECONDS,
    reserve_pets: bool = True,
    sale_recover_after_seconds: float = DEFAULT_RECOVER_AFTER_SECONDS,
    sale_recovery_interval_seconds: float = DEFAULT_RECOVERY_INTERVAL_SECONDS,
    max_open_orders_per_customer: int = DEFAULT_MAX_OPEN_ORDERS,
) -> ServiceDefinition:
    """The order service over `store` and `pets`, for the shared server (tests use any of both),
    with the recovery of unfinished sales running while it serves.

    Readiness is the store's alone, not the pet service's: without it orders can still be
    read and deleted, and CreateOrder answers UNAVAILABLE by itself.
    """
    sale = Sale(store, pets, reserve_pets=reserve_pets, recover_after_seconds=sale_recover_after_seconds)
    servicer = OrderServicer(
        store,
        sale,
        idempotency_ttl_seconds=idempotency_ttl_seconds,
        max_open_orders=max_open_orders_per_customer,
    )

    def register(server: grpc.aio.Server) -> None:
        order_service_pb2_grpc.add_OrderServiceServicer_to_server(servicer, server)

    ready = readiness or StoreReadiness(store)
    return ServiceDefinition(
        SERVICE_NAME,
        register,
        ready.check,
        validator=REQUEST_RULES,
        database_events=ready.events,
        polled_methods=frozenset({f"/{SERVICE_NAME}/ReadOrderEvents"}),  # the webhook service's reads
        background=lambda: sale.recover_forever(sale_recovery_interval_seconds),
    )


@asynccontextmanager
async def order_service(settings: OrderSettings) -> AsyncIterator[ServiceDefinition]:
    """MongoDB when MONGODB_URI is set, else the in-memory store; a channel to the pet
    service either way. Closes the client and the channel on exit."""
    # Annotated so the store is typed as the service's own store protocol.
    stores: AbstractAsyncContextManager[tuple[OrderStore, StoreReadiness]] = open_store(
        settings.service, memory=MemoryOrderStore, mongo=MongoOrderStore
    )
    async with (
        grpc_pet_directory(
            settings.pet_service_addr,
            timeout_seconds=settings.pet_service_timeout_seconds,
            signer=CallerSigner(ORDER_SERVICE, settings.caller_signing_key),
        ) as pets,
        stores as (store, readiness),
    ):
        yield build_definition(
            store,
            pets,
            readiness,
            idempotency_ttl_seconds=settings.service.idempotency_ttl_seconds,
            reserve_pets=settings.reserve_pets,
            sale_recover_after_seconds=settings.sale_recover_after_seconds,
            sale_recovery_interval_seconds=settings.sale_recovery_interval_seconds,
            max_open_orders_per_customer=settings.max_open_orders_per_customer,
        )
