"""The relay: events in from the order and pet services (intake), deliveries out to the
endpoints (delivery), and delivered deliveries forgotten once their retention ends (purge).

It runs in the one webhook-service replica (deploy: replicas 1, strategy Recreate): one process
orders each endpoint's deliveries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

from petstore_common.caller_gate import WEBHOOK_SERVICE
from petstore_common.caller_tokens import CallerSigner
from petstore_common.grpc_client import create_channel
from petstore_webhook.delivery import DeliveryPolicy, DeliverySupervisor, utc_now
from petstore_webhook.intake import Intake
from petstore_webhook.settings import WebhookSettings
from petstore_webhook.sources import ORDER_SERVICE, PET_SERVICE, EventSource, OrderEventSource, PetEventSource
from petstore_webhook.storage.base import DELIVERED_RETENTION, WebhookStore

log = logging.getLogger(__name__)

PURGE_INTERVAL_SECONDS = 600.0
"""How often delivered deliveries older than DELIVERED_RETENTION are forgotten."""


def delivery_policy(settings: WebhookSettings) -> DeliveryPolicy:
    return DeliveryPolicy(
        max_attempts=settings.max_attempts,
        retry_base_seconds=settings.retry_base_seconds,
        retry_max_seconds=settings.retry_max_seconds,
        timeout_seconds=settings.timeout_seconds,
        allowed_networks=settings.allowed_networks,
        ca_file=settings.ca_file,
    )


@contextlib.asynccontextmanager
async def event_sources(settings: WebhookSettings) -> AsyncIterator[list[EventSource]]:
    """The order and pet services' outboxes over signed channels, closed on exit."""
    signer = CallerSigner(WEBHOOK_SERVICE, settings.caller_signing_key)
    async with (
        create_channel(settings.order_service_addr, (ORDER_SERVICE,), signer=signer) as orders,
        create_channel(settings.pet_service_addr, (PET_SERVICE,), signer=signer) as pets,
    ):
        yield [OrderEventSource(orders), PetEventSource(pets)]


async def purge_forever(store: WebhookStore, *, interval_seconds: float = PURGE_INTERVAL_SECONDS) -> None:
    while True:
        try:
            purged = await store.purge(delivered_before=utc_now() - DELIVERED_RETENTION)
            if purged:
                log.info("purged delivered webhook deliveries", extra={"purged": purged})
        except Exception:
            log.exception("purging delivered webhook deliveries failed; trying again later")
        await asyncio.sleep(interval_seconds)


async def run_relay(store: WebhookStore, sources: Sequence[EventSource], settings: WebhookSettings) -> None:
    """Intake, delivery and purge until cancelled (or one of them fails: none is meant to)."""
    supervisor = DeliverySupervisor(store, delivery_policy(settings))
    intake = Intake(store, sources, poll_seconds=settings.poll_seconds, wake=supervisor.wake)
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(supervisor.run(), name="webhook-delivery")
        tasks.create_task(intake.run_forever(), name="webhook-intake")
        tasks.create_task(purge_forever(store), name="webhook-purge")


async def relay_forever(store: WebhookStore, settings: WebhookSettings) -> None:
    async with event_sources(settings) as sources:
        await run_relay(store, sources, settings)
