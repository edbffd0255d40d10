"""Wires the webhook service together: opens its store, describes it to the server, and runs
the relay (reading the order and pet services' events, delivering them) while it serves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import grpc

from petstore.webhook.v1 import webhook_service_pb2_grpc
from petstore_common.grpc_server import ServiceDefinition
from petstore_common.stores import StoreReadiness, open_store
from petstore_webhook.relay import relay_forever
from petstore_webhook.servicer import WebhookServicer
from petstore_webhook.settings import WebhookSettings
from petstore_webhook.storage.base import WebhookStore
from petstore_webhook.storage.memory import MemoryWebhookStore
from petstore_webhook.storage.mongo import MongoWebhookStore
from petstore_webhook.targets import IPNetwork, Resolve, resolve_host
from petstore_webhook.validation import REQUEST_RULES

SERVICE_NAME = "petstore.webhook.v1.WebhookService"


def build_definition(
    store: WebhookStore,
    readiness: StoreReadiness | None = None,
    *,
    allowed_networks: Sequence[IPNetwork] = (),
    resolve: Resolve = resolve_host,
    background: Callable[[], Coroutine[Any, Any, None]] | None = None,
) -> ServiceDefinition:
    """The webhook API over `store` for the shared server (tests use any store and resolver),
    with `background` (the relay) running while it serves."""
    servicer = WebhookServicer(store, allowed_networks=allowed_networks, resolve=resolve)

    def register(server: grpc.aio.Server) -> None:
        webhook_service_pb2_grpc.add_WebhookServiceServicer_to_server(servicer, server)

    ready = readiness or StoreReadiness(store)
    return ServiceDefinition(
        SERVICE_NAME,
        register,
        ready.check,
        validator=REQUEST_RULES,
        database_events=ready.events,
        background=background,
    )


@asynccontextmanager
async def webhook_service(settings: WebhookSettings) -> AsyncIterator[ServiceDefinition]:
    """MongoDB when MONGODB_URI is set, else the in-memory store; closes the client on exit."""
    # Annotated so the store is typed as the service's own store protocol.
    stores: AbstractAsyncContextManager[tuple[WebhookStore, StoreReadiness]] = open_store(
        settings.service, memory=MemoryWebhookStore, mongo=MongoWebhookStore
    )
    async with stores as (store, readiness):
        yield build_definition(
            store,
            readiness,
            allowed_networks=settings.allowed_networks,
            background=lambda: relay_forever(store, settings),
        )
