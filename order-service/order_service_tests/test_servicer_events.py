"""ReadOrderEvents and AckOrderEvents over a real in-process gRPC server, called as the webhook
service calls them (its own caller tokens): the request rules (protovalidate), the page's default
and cap, and the issuers the caller gate refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import grpc
import pytest

from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import ORDER_SERVICE, WEBHOOK_SERVICE
from petstore_common.caller_testing import signed_channel, signer
from petstore_common.grpc_server import start_service
from petstore_common.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from petstore_order.pets import grpc_pet_directory
from petstore_order.service import build_definition
from petstore_order.storage.memory import MemoryOrderStore

from .pet_backend import closed_address, local_settings
from .test_servicer import fails

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub

E = order_service_pb2
T0 = datetime(2026, 1, 1, tzinfo=UTC)
ACKS_RULE = "acks: must have at most 1000 entries"


@pytest.fixture
async def address(store: MemoryOrderStore) -> AsyncIterator[str]:
    # No pet service: reading and acknowledging events never asks it.
    async with grpc_pet_directory(closed_address(), timeout_seconds=1, signer=signer(ORDER_SERVICE)) as pets:
        running = await start_service(build_definition(store, pets), local_settings())
        try:
            yield f"127.0.0.1:{running.port}"
        finally:
            await running.stop(None)


@pytest.fixture
async def webhooks(address: str) -> AsyncIterator[OrderServiceAsyncStub]:
    """The service as the webhook service reaches it."""
    async with signed_channel(address, WEBHOOK_SERVICE) as channel:
        yield order_service_pb2_grpc.OrderServiceStub(channel)


async def with_events(store: MemoryOrderStore, count: int) -> list[int]:
    ids = []
    for _ in range(count):
        order = order_pb2.Order(pet_id=1, quantity=1, status=order_pb2.ORDER_STATUS_PLACED)
        ids.append((await store.create(order, at=T0, event=E.ORDER_EVENT_TYPE_PLACED)).id)
    return ids


async def read(stub: OrderServiceAsyncStub, page_size: int = 0) -> list[order_service_pb2.OrderEvent]:
    response = await stub.ReadOrderEvents(E.ReadOrderEventsRequest(page_size=page_size), timeout=5)
    return list(response.events)


async def test_events_are_read_then_acknowledged_and_an_ack_again_is_harmless(
    store: MemoryOrderStore, webhooks: OrderServiceAsyncStub
) -> None:
    first, second = await with_events(store, 2)

    events = await read(webhooks)
    assert [(event.order.id, event.sequence, event.type) for event in events] == [
        (first, 1, E.ORDER_EVENT_TYPE_PLACED),
        (second, 1, E.ORDER_EVENT_TYPE_PLACED),
    ]
    ack = E.AckOrderEventsRequest(acks=[E.OrderEventAck(order_id=first, through_sequence=1)])
    await webhooks.AckOrderEvents(ack, timeout=5)
    await webhooks.AckOrderEvents(ack, timeout=5)
    unknown = E.OrderEventAck(order_id=10**12, through_sequence=3)
    await webhooks.AckOrderEvents(E.AckOrderEventsRequest(acks=[unknown]), timeout=5)

    assert [event.order.id for event in await read(webhooks)] == [second]


async def test_a_page_has_the_default_size_and_is_capped(
    store: MemoryOrderStore, webhooks: OrderServiceAsyncStub
) -> None:
    await with_events(store, MAX_PAGE_SIZE + 1)

    assert len(await read(webhooks)) == DEFAULT_PAGE_SIZE
    assert len(await read(webhooks, 3)) == 3
    assert len(await read(webhooks, MAX_PAGE_SIZE * 10)) == MAX_PAGE_SIZE


async def test_a_negative_page_size_is_refused(webhooks: OrderServiceAsyncStub) -> None:
    with fails(grpc.StatusCode.INVALID_ARGUMENT, "pageSize: must be greater than or equal to 0"):
        await read(webhooks, -1)


async def test_more_than_a_thousand_acks_are_refused_and_none_is_applied(
    store: MemoryOrderStore, webhooks: OrderServiceAsyncStub
) -> None:
    [order_id] = await with_events(store, 1)
    acks = [E.OrderEventAck(order_id=order_id, through_sequence=1)] * 1001

    with fails(grpc.StatusCode.INVALID_ARGUMENT, ACKS_RULE):
        await webhooks.AckOrderEvents(E.AckOrderEventsRequest(acks=acks), timeout=5)

    assert len(await read(webhooks)) == 1
    await webhooks.AckOrderEvents(E.AckOrderEventsRequest(acks=acks[:1000]), timeout=5)
    assert await read(webhooks) == []


@pytest.mark.parametrize(
    "ack",
    [E.OrderEventAck(order_id=0, through_sequence=1), E.OrderEventAck(order_id=1, through_sequence=0)],
    ids=["no-order", "no-sequence"],
)
async def test_an_ack_without_an_order_or_a_sequence_is_refused(
    webhooks: OrderServiceAsyncStub, ack: order_service_pb2.OrderEventAck
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await webhooks.AckOrderEvents(E.AckOrderEventsRequest(acks=[ack]), timeout=5)

    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_the_order_services_own_issuer_may_not_read_or_acknowledge_events(
    store: MemoryOrderStore, address: str
) -> None:
    await with_events(store, 1)
    async with signed_channel(address, ORDER_SERVICE) as channel:
        stub = order_service_pb2_grpc.OrderServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as reading:
            await read(stub)
        ack = E.OrderEventAck(order_id=1, through_sequence=1)
        with pytest.raises(grpc.aio.AioRpcError) as acking:
            await stub.AckOrderEvents(E.AckOrderEventsRequest(acks=[ack]), timeout=5)

    assert reading.value.code() == acking.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert len(await store.read_events(limit=10)) == 1  # not acknowledged


async def test_the_webhook_service_may_not_touch_orders(webhooks: OrderServiceAsyncStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await webhooks.GetOrder(E.GetOrderRequest(caller=callers.staff(), id=1), timeout=5)

    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
