"""The relay end to end in one process: an order service's outbox (a fake gRPC service that
keeps events until acknowledged), the relay with its real sources, store and delivery, and a
real HTTPS receiver verifying signatures. Acknowledgements lost on the way make no duplicate,
and a pet service of an earlier release (no ReadPetEvents) stops nothing."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common.caller_gate import WEBHOOK_SERVICE
from petstore_common.caller_testing import KEYS
from petstore_devstack.webhook_receiver import WebhookReceiver
from petstore_webhook.delivery import DeliveryPolicy
from petstore_webhook.payloads import order_data
from petstore_webhook.relay import delivery_policy, purge_forever, relay_forever
from petstore_webhook.settings import WebhookSettings
from petstore_webhook.sources import ORDER_SERVICE, PET_SERVICE
from petstore_webhook.storage.base import DELIVERED_RETENTION, EndpointState
from petstore_webhook.storage.memory import MemoryWebhookStore
from webhook_service_tests.conftest import local_settings
from webhook_service_tests.fake_services import handlers_for, serve

SECRET = "whsec_" + base64.b64encode(b"relay test secret 24 byte").decode()
UNAVAILABLE_ANSWERS = 3
"""An AckOrderEvents is retried by the channel (IDEMPOTENT) up to 3 attempts: failing that many
makes the relay see its acknowledgement lost."""


class Outbox:
    """Order events kept per order until acknowledged, as the order service keeps them."""

    def __init__(self) -> None:
        self.events: dict[int, list[order_service_pb2.OrderEvent]] = {}
        self.failing_acks = 0

    def record(self, order_id: int, event_type: int, status: int) -> order_service_pb2.OrderEvent:
        kept = self.events.setdefault(order_id, [])
        sequence = len(kept) + 1
        stamp = Timestamp()
        stamp.FromDatetime(datetime.now(UTC))
        event = order_service_pb2.OrderEvent(
            id=f"evt_{order_id}_{event_type}",
            type=event_type,  # type: ignore[arg-type]
            time=stamp,
            sequence=sequence,
            order=order_pb2.Order(id=order_id, pet_id=1, quantity=1, status=status),  # type: ignore[arg-type]
        )
        kept.append(event)
        return event

    async def ReadOrderEvents(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        chosen = list(self.events.values())[: request.page_size]
        return order_service_pb2.ReadOrderEventsResponse(events=[event for kept in chosen for event in kept])

    async def AckOrderEvents(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        if self.failing_acks:
            self.failing_acks -= 1
            await context.abort(grpc.StatusCode.UNAVAILABLE, "restarting")
        for ack in request.acks:
            left = [
                event for event in self.events.get(ack.order_id, []) if event.sequence > ack.through_sequence
            ]
            if left:
                self.events[ack.order_id] = left
            else:
                self.events.pop(ack.order_id, None)
        return order_service_pb2.AckOrderEventsResponse()


@contextlib.asynccontextmanager
async def services(outbox: Outbox) -> AsyncIterator[tuple[str, str]]:
    """The order service's outbox, and a pet service of release 1.0.0 (no ReadPetEvents)."""
    methods = {"ReadOrderEvents": outbox.ReadOrderEvents, "AckOrderEvents": outbox.AckOrderEvents}
    server, address = await serve(handlers_for(ORDER_SERVICE, methods), handlers_for(PET_SERVICE, {}))
    try:
        yield address, address
    finally:
        await server.stop(None)


@contextlib.asynccontextmanager
async def relaying(store: MemoryWebhookStore, settings: WebhookSettings) -> AsyncIterator[None]:
    task = asyncio.create_task(relay_forever(store, settings))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def settings_for(addresses: tuple[str, str], receiver: WebhookReceiver) -> WebhookSettings:
    return WebhookSettings(
        service=local_settings(),
        order_service_addr=addresses[0],
        pet_service_addr=addresses[1],
        caller_signing_key=KEYS[WEBHOOK_SERVICE].seed,
        allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),),
        ca_file=receiver.ca_file,
        max_attempts=5,
        retry_base_seconds=0.01,
        retry_max_seconds=0.05,
        timeout_seconds=5.0,
        poll_seconds=0.02,
    )


async def test_recorded_order_events_reach_the_endpoint_signed_in_order_and_are_acknowledged(
    store: MemoryWebhookStore,
) -> None:
    outbox = Outbox()
    placed = outbox.record(12, order_service_pb2.ORDER_EVENT_TYPE_PLACED, order_pb2.ORDER_STATUS_PLACED)
    approved = outbox.record(12, order_service_pb2.ORDER_EVENT_TYPE_APPROVED, order_pb2.ORDER_STATUS_APPROVED)
    other = outbox.record(13, order_service_pb2.ORDER_EVENT_TYPE_PLACED, order_pb2.ORDER_STATUS_PLACED)
    outbox.failing_acks = UNAVAILABLE_ANSWERS  # the first acknowledgement is lost: all is read twice

    async with WebhookReceiver(SECRET) as receiver, services(outbox) as addresses:
        await store.create_endpoint(
            url=receiver.url,
            event_types=("order.placed", "order.approved"),
            secret=SECRET,
            at=datetime.now(UTC),
        )
        async with relaying(store, settings_for(addresses, receiver)):
            await receiver.wait_for(3)
            async with asyncio.timeout(10):
                while outbox.events:  # noqa: ASYNC110 (a fake service's state, polled as a client would)
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)  # re-reads and retries would have arrived by now

        received = list(receiver.received)
    assert outbox.failing_acks == 0  # the lost acknowledgements did happen

    assert [request.id for request in received if request.id.startswith("evt_12")] == [placed.id, approved.id]
    assert sorted(request.id for request in received) == sorted(
        [placed.id, approved.id, other.id]
    )  # once each
    assert all(request.verified for request in received)
    by_id = {request.id: request.json() for request in received}
    assert by_id[approved.id]["type"] == "order.approved"
    assert by_id[approved.id]["data"] == order_data(approved.order)
    assert by_id[placed.id]["data"]["status"] == "placed"


async def test_an_endpoint_that_never_answers_2xx_is_disabled_while_events_keep_flowing(
    store: MemoryWebhookStore,
) -> None:
    outbox = Outbox()
    outbox.record(12, order_service_pb2.ORDER_EVENT_TYPE_PLACED, order_pb2.ORDER_STATUS_PLACED)
    async with WebhookReceiver(SECRET, default_answer=500) as failing, services(outbox) as addresses:
        endpoint = await store.create_endpoint(
            url=failing.url, event_types=("order.placed",), secret=SECRET, at=datetime.now(UTC)
        )
        async with relaying(store, settings_for(addresses, failing)):
            async with asyncio.timeout(10):
                while (await store.get_endpoint(endpoint.id)).state is EndpointState.ENABLED:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            outbox.record(14, order_service_pb2.ORDER_EVENT_TYPE_PLACED, order_pb2.ORDER_STATUS_PLACED)
            async with asyncio.timeout(10):
                while outbox.events:  # noqa: ASYNC110 (still read and acknowledged: nothing piles up)
                    await asyncio.sleep(0.01)

    assert len(failing.received) == 5  # max_attempts, then nothing
    assert "evt_12_1" in (await store.get_endpoint(endpoint.id)).disabled_reason


class PurgeSpy(MemoryWebhookStore):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[datetime] = []

    async def purge(self, *, delivered_before: datetime) -> int:
        self.asked.append(delivered_before)
        if len(self.asked) == 1:
            raise ConnectionError("the webhook database is unreachable")  # logged, tried again
        return await super().purge(delivered_before=delivered_before)


async def test_delivered_deliveries_are_purged_after_their_retention_periodically() -> None:
    store = PurgeSpy()
    task = asyncio.create_task(purge_forever(store, interval_seconds=0.01))
    try:
        async with asyncio.timeout(5):
            while len(store.asked) < 3:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    now = datetime.now(UTC)
    for cutoff in store.asked:
        assert now - DELIVERED_RETENTION - timedelta(seconds=5) < cutoff <= now - DELIVERED_RETENTION


def test_the_relay_reads_the_delivery_settings_by_their_names() -> None:
    settings = WebhookSettings.from_env(
        {
            "CALLER_SIGNING_KEY": KEYS[WEBHOOK_SERVICE].seed,
            "WEBHOOK_MAX_ATTEMPTS": "3",
            "WEBHOOK_RETRY_BASE_SECONDS": "0.5",
            "WEBHOOK_RETRY_MAX_SECONDS": "7",
            "WEBHOOK_TIMEOUT_SECONDS": "4",
            "WEBHOOK_ALLOWED_NETWORKS": "10.0.0.0/8",
        }
    )
    assert delivery_policy(settings) == DeliveryPolicy(
        max_attempts=3,
        retry_base_seconds=0.5,
        retry_max_seconds=7.0,
        timeout_seconds=4.0,
        allowed_networks=(ipaddress.ip_network("10.0.0.0/8"),),
        ca_file=None,
    )
