"""The order and pet event sources against real gRPC servers on loopback: events read as the
store keeps them, acknowledged by document and sequence, every call signed as the webhook
service, and a service of an earlier release (no ReadXEvents) or one that is down tolerated."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common.caller_gate import WEBHOOK_SERVICE
from petstore_common.caller_testing import KEYS, signed_channel
from petstore_common.caller_tokens import (
    BEARER,
    EMPTY_CALLER,
    METADATA_KEY,
    CallerVerifier,
    TrustedKey,
    audience_of,
)
from petstore_webhook.payloads import order_data, pet_data
from petstore_webhook.relay import event_sources
from petstore_webhook.settings import WebhookSettings
from petstore_webhook.sources import (
    ORDER_SERVICE,
    PET_SERVICE,
    EventSource,
    OrderEventSource,
    SourceUnavailable,
)
from webhook_service_tests.conftest import local_settings
from webhook_service_tests.fake_services import handlers_for, serve

WHEN = datetime(2026, 5, 1, 12, 0, 0, 250_000, tzinfo=UTC)
VERIFIER = CallerVerifier([TrustedKey(WEBHOOK_SERVICE, KEYS[WEBHOOK_SERVICE].public)])


def timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def check_signed(context: grpc.aio.ServicerContext[Any, Any], method: str) -> None:
    """The call carries a token of the webhook service, for this service, on behalf of nobody."""
    metadata = dict(context.invocation_metadata() or ())
    token = str(metadata[METADATA_KEY]).removeprefix(BEARER)
    verified = VERIFIER.verify(token, audience_of(method))
    assert verified.issuer == WEBHOOK_SERVICE
    assert verified.caller == EMPTY_CALLER


ORDER = order_pb2.Order(id=12, pet_id=3, quantity=1, status=order_pb2.ORDER_STATUS_APPROVED)
PET = pet_pb2.Pet(id=3, name="Rex", photo_urls=["u"], status=pet_pb2.PET_STATUS_PENDING)


class Orders:
    def __init__(self) -> None:
        self.reads: list[int] = []
        self.acks: list[list[tuple[int, int]]] = []

    async def ReadOrderEvents(self, request: Any, context: Any) -> Any:
        check_signed(context, "/petstore.order.v1.OrderService/ReadOrderEvents")
        self.reads.append(request.page_size)
        placed = order_pb2.Order(id=12, pet_id=3, quantity=1, status=order_pb2.ORDER_STATUS_PLACED)
        return order_service_pb2.ReadOrderEventsResponse(
            events=[
                order_service_pb2.OrderEvent(
                    id="evt_a",
                    type=order_service_pb2.ORDER_EVENT_TYPE_PLACED,
                    time=timestamp(WHEN),
                    sequence=4,
                    order=placed,
                ),
                order_service_pb2.OrderEvent(
                    id="evt_b",
                    type=order_service_pb2.ORDER_EVENT_TYPE_APPROVED,
                    time=timestamp(WHEN),
                    sequence=5,
                    order=ORDER,
                ),
                # A type a newer order service knows and this release does not: skipped, acknowledged.
                order_service_pb2.OrderEvent(
                    id="evt_c",
                    type=99,  # type: ignore[arg-type]
                    time=timestamp(WHEN),
                    sequence=2,
                    order=order_pb2.Order(id=13),
                ),
            ]
        )

    async def AckOrderEvents(self, request: Any, context: Any) -> Any:
        check_signed(context, "/petstore.order.v1.OrderService/AckOrderEvents")
        self.acks.append([(ack.order_id, ack.through_sequence) for ack in request.acks])
        return order_service_pb2.AckOrderEventsResponse()


class Pets:
    async def ReadPetEvents(self, request: Any, context: Any) -> Any:
        check_signed(context, "/petstore.pet.v1.PetService/ReadPetEvents")
        return pet_service_pb2.ReadPetEventsResponse(
            events=[
                pet_service_pb2.PetEvent(
                    id="evt_p",
                    type=pet_service_pb2.PET_EVENT_TYPE_RESERVED,
                    time=timestamp(WHEN),
                    sequence=1,
                    pet=PET,
                    order_id=12,
                )
            ]
        )


def orders_handler(orders: Orders) -> grpc.GenericRpcHandler:
    methods = {"ReadOrderEvents": orders.ReadOrderEvents, "AckOrderEvents": orders.AckOrderEvents}
    return handlers_for(ORDER_SERVICE, methods)


OLD_ORDERS = handlers_for(ORDER_SERVICE, {})
"""An order service of release 1.0.0: no event methods (UNIMPLEMENTED)."""


def settings_for(order_address: str, pet_address: str) -> WebhookSettings:
    return WebhookSettings(
        service=local_settings(),
        order_service_addr=order_address,
        pet_service_addr=pet_address,
        caller_signing_key=KEYS[WEBHOOK_SERVICE].seed,
    )


@pytest.fixture
async def servers() -> AsyncIterator[tuple[Orders, list[EventSource]]]:
    orders = Orders()
    order_server, order_address = await serve(orders_handler(orders))
    pet_server, pet_address = await serve(handlers_for(PET_SERVICE, {"ReadPetEvents": Pets().ReadPetEvents}))
    try:
        async with event_sources(settings_for(order_address, pet_address)) as sources:
            yield orders, sources
    finally:
        await order_server.stop(None)
        await pet_server.stop(None)


async def test_order_events_are_read_as_the_store_keeps_them_and_acknowledged_by_sequence(
    servers: tuple[Orders, list[EventSource]],
) -> None:
    orders, (order_source, _) = servers

    page = await order_source.read()

    assert [(e.id, e.type, e.subject, e.sequence, e.time) for e in page.events] == [
        ("evt_a", "order.placed", "order:12", 4, WHEN),
        ("evt_b", "order.approved", "order:12", 5, WHEN),
    ]
    assert page.events[1].data == order_data(ORDER)
    assert page.events[0].data["status"] == "placed"  # each event carries the order as it was then
    assert page.through == {12: 5, 13: 2}
    assert orders.reads
    assert 0 < orders.reads[0] <= 1000
    assert page.full is False

    await order_source.acknowledge(page)

    assert orders.acks == [[(12, 5), (13, 2)]]


async def test_pet_events_are_read_with_the_pet_as_the_api_shows_it(
    servers: tuple[Orders, list[EventSource]],
) -> None:
    _, (_, pet_source) = servers

    page = await pet_source.read()

    [reserved] = page.events
    assert (reserved.id, reserved.type, reserved.subject, reserved.sequence) == (
        "evt_p",
        "pet.reserved",
        "pet:3",
        1,
    )
    assert reserved.data == pet_data(PET)
    assert page.through == {3: 1}


async def test_a_full_page_says_more_may_wait(servers: tuple[Orders, list[EventSource]]) -> None:
    orders, _ = servers
    server, address = await serve(orders_handler(orders))
    try:
        async with signed_channel(address, WEBHOOK_SERVICE) as channel:
            page = await OrderEventSource(channel, page_size=2).read()
    finally:
        await server.stop(None)
    assert orders.reads[-1] == 2
    assert page.full is True  # two documents (12 and 13) for a page of two


async def test_a_service_of_an_earlier_release_gives_nothing_and_is_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, address = await serve(OLD_ORDERS)
    try:
        async with event_sources(settings_for(address, address)) as (order_source, _):
            with caplog.at_level(logging.WARNING, logger="petstore_webhook.sources"):
                first = await order_source.read()
                second = await order_source.read()
                await order_source.acknowledge(first)  # nothing read: nothing asked
    finally:
        await server.stop(None)

    assert first.events == second.events == ()
    assert first.full is second.full is False
    said = [record for record in caplog.records if "earlier release" in record.getMessage()]
    assert len(said) == 1


async def test_a_service_that_is_down_is_tried_again_later() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    async with event_sources(settings_for(address, address)) as (order_source, pet_source):
        with pytest.raises(SourceUnavailable, match="UNAVAILABLE"):
            await order_source.read()
        with pytest.raises(SourceUnavailable):
            await pet_source.read()
