"""ListOrders over a real in-process gRPC server (memory store): who sees which orders, filters
and pages. The refusals are tested from the side of the caller who must be refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
import pytest

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common import callers
from petstore_order.storage.memory import MemoryOrderStore

from .pet_backend import pet_backend
from .test_servicer import fails, order_stub

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub

STAFF = callers.staff()
ANN = callers.customer(11)
BOB = callers.customer(12)
PLACED = order_pb2.ORDER_STATUS_PLACED
APPROVED = order_pb2.ORDER_STATUS_APPROVED


@pytest.fixture
async def stub(store: MemoryOrderStore) -> AsyncIterator[OrderServiceAsyncStub]:
    async with pet_backend() as pets, order_stub(store, pets.address) as stub:
        yield stub


@pytest.fixture
async def orders(store: MemoryOrderStore) -> dict[str, list[int]]:
    """Ann's three orders (one approved), Bob's one and a staff order (nobody's), pets 1 and 2."""
    made = {
        "ann": [
            order_pb2.Order(id=1, pet_id=1, quantity=1, status=PLACED, owner_user_id=ANN.user_id),
            order_pb2.Order(id=3, pet_id=2, quantity=1, status=APPROVED, owner_user_id=ANN.user_id),
            order_pb2.Order(id=5, pet_id=1, quantity=1, status=PLACED, owner_user_id=ANN.user_id),
        ],
        "bob": [order_pb2.Order(id=2, pet_id=1, quantity=1, status=PLACED, owner_user_id=BOB.user_id)],
        "staff": [order_pb2.Order(id=4, pet_id=2, quantity=1, status=PLACED)],
    }
    for group in made.values():
        for order in group:
            await store.create(order)
    return {owner: [order.id for order in group] for owner, group in made.items()}


async def listed(
    stub: OrderServiceAsyncStub, caller: callers.Caller, **fields: object
) -> order_service_pb2.ListOrdersResponse:
    request = order_service_pb2.ListOrdersRequest(caller=caller, **fields)  # type: ignore[arg-type]
    return await stub.ListOrders(request, timeout=5)


def ids(reply: order_service_pb2.ListOrdersResponse) -> list[int]:
    return [order.id for order in reply.orders]


async def test_a_customer_lists_only_its_own_orders(
    stub: OrderServiceAsyncStub, orders: dict[str, list[int]]
) -> None:
    assert ids(await listed(stub, ANN)) == orders["ann"]
    assert ids(await listed(stub, BOB)) == orders["bob"]
    assert ids(await listed(stub, callers.customer(99))) == []


async def test_a_customer_naming_itself_as_owner_sees_its_own(
    stub: OrderServiceAsyncStub, orders: dict[str, list[int]]
) -> None:
    assert ids(await listed(stub, ANN, owner_user_id=ANN.user_id)) == orders["ann"]


async def test_a_customer_asking_for_another_owners_orders_is_refused(
    stub: OrderServiceAsyncStub, orders: dict[str, list[int]]
) -> None:
    for owner in (BOB.user_id, 99):  # an owner with orders, and one without: the same refusal
        with fails(grpc.StatusCode.PERMISSION_DENIED, "a customer lists only its own orders"):
            await listed(stub, ANN, owner_user_id=owner)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(callers.anonymous(), id="anonymous"),
        pytest.param(callers.Caller(), id="no-caller"),
        pytest.param(callers.Caller(kind=callers.customer(1).kind), id="customer-without-id"),
    ],
)
async def test_without_a_known_caller_lists_are_refused(
    stub: OrderServiceAsyncStub, orders: dict[str, list[int]], caller: callers.Caller
) -> None:
    with fails(grpc.StatusCode.PERMISSION_DENIED, "orders are for customers and staff: sign in first"):
        await listed(stub, caller)


async def test_staff_list_every_order_and_any_owners(
    stub: OrderServiceAsyncStub, orders: dict[str, list[int]]
) -> None:
    assert ids(await listed(stub, STAFF)) == [1, 2, 3, 4, 5]
    assert ids(await listed(stub, STAFF, owner_user_id=BOB.user_id)) == orders["bob"]


async def test_filters_by_status_and_pet(stub: OrderServiceAsyncStub, orders: dict[str, list[int]]) -> None:
    assert ids(await listed(stub, STAFF, statuses=[APPROVED])) == [3]
    assert ids(await listed(stub, STAFF, statuses=[PLACED, APPROVED], pet_id=2)) == [3, 4]
    assert ids(await listed(stub, ANN, statuses=[PLACED], pet_id=1)) == [1, 5]


async def test_pages_follow_the_token(stub: OrderServiceAsyncStub, orders: dict[str, list[int]]) -> None:
    first = await listed(stub, STAFF, page_size=2)
    second = await listed(stub, STAFF, page_size=2, page_token=first.next_page_token)
    last = await listed(stub, STAFF, page_size=2, page_token=second.next_page_token)

    assert (ids(first), ids(second), ids(last)) == ([1, 2], [3, 4], [5])
    assert first.next_page_token
    assert second.next_page_token
    assert last.next_page_token == ""


async def test_a_token_of_another_filter_or_owner_is_invalid(
    stub: OrderServiceAsyncStub, orders: dict[str, list[int]]
) -> None:
    token = (await listed(stub, ANN, page_size=1)).next_page_token

    with fails(grpc.StatusCode.INVALID_ARGUMENT, "pageToken does not belong to this filter"):
        await listed(stub, BOB, page_size=1, page_token=token)
    with fails(grpc.StatusCode.INVALID_ARGUMENT, "pageToken does not belong to this filter"):
        await listed(stub, ANN, page_size=1, page_token=token, statuses=[PLACED])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"statuses": [7]}, "status[0]: must be one of placed, approved, delivered"),
        ({"pet_id": 0}, "petId: must be positive"),
        ({"owner_user_id": -1}, "ownerUserId: must be positive"),
        ({"page_size": -1}, "limit must not be negative"),
        ({"page_token": "forged"}, "pageToken is invalid"),
    ],
)
async def test_invalid_lists_are_invalid_argument(
    stub: OrderServiceAsyncStub, fields: dict[str, object], message: str
) -> None:
    with fails(grpc.StatusCode.INVALID_ARGUMENT, message):
        await listed(stub, STAFF, **fields)
