"""OrderService over a real in-process gRPC server (memory store), called through the stub,
asking a real in-process pet service over gRPC."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import ORDER_SERVICE
from petstore_common.caller_testing import signed_channel, signer
from petstore_common.grpc_client import is_serving
from petstore_common.grpc_server import start_service
from petstore_order.pets import grpc_pet_directory
from petstore_order.service import SERVICE_NAME, build_definition
from petstore_order.storage.memory import MemoryOrderStore

from .pet_backend import PetBackend, closed_address, local_settings, pet_backend

STAFF = callers.staff()

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub

APPROVED = order_pb2.ORDER_STATUS_APPROVED
PLACED = order_pb2.ORDER_STATUS_PLACED


@asynccontextmanager
async def order_stub(store: MemoryOrderStore, pet_service_addr: str) -> AsyncIterator[OrderServiceAsyncStub]:
    """The order service over `store`, asking the pet service at `pet_service_addr`."""
    async with grpc_pet_directory(pet_service_addr, timeout_seconds=2, signer=signer(ORDER_SERVICE)) as pets:
        running = await start_service(build_definition(store, pets), local_settings())
        try:
            async with signed_channel(f"127.0.0.1:{running.port}") as channel:
                yield order_service_pb2_grpc.OrderServiceStub(channel)
        finally:
            await running.stop(None)


@pytest.fixture
async def stub(store: MemoryOrderStore, pets: PetBackend) -> AsyncIterator[OrderServiceAsyncStub]:
    async with order_stub(store, pets.address) as stub:
        yield stub


@pytest.fixture
async def pet_id(pets: PetBackend) -> int:
    return await pets.add_pet()


async def create(
    stub: OrderServiceAsyncStub, order: order_pb2.Order, caller: callers.Caller = STAFF
) -> order_pb2.Order:
    request = order_service_pb2.CreateOrderRequest(caller=caller, order=order)
    return (await stub.CreateOrder(request, timeout=5)).order


async def get(stub: OrderServiceAsyncStub, order_id: int, caller: callers.Caller = STAFF) -> order_pb2.Order:
    request = order_service_pb2.GetOrderRequest(caller=caller, id=order_id)
    return (await stub.GetOrder(request, timeout=5)).order


async def delete(stub: OrderServiceAsyncStub, order_id: int, caller: callers.Caller = STAFF) -> None:
    await stub.DeleteOrder(order_service_pb2.DeleteOrderRequest(caller=caller, id=order_id), timeout=5)


def a_full_order(pet_id: int, **fields: object) -> order_pb2.Order:
    order = order_pb2.Order(
        pet_id=pet_id,
        quantity=2,
        ship_date=Timestamp(seconds=1_795_342_530, nanos=250_000_000),
        status=APPROVED,
        complete=True,
    )
    for name, value in fields.items():
        setattr(order, name, value)
    return order


@contextmanager
def fails(code: grpc.StatusCode, message: str) -> Iterator[None]:
    """Expect the call inside to fail with this status code and exact message."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        yield
    assert (caught.value.code(), caught.value.details()) == (code, message)


async def wait_until_serving(address: str) -> bool:
    async with signed_channel(address) as channel:
        for _ in range(50):
            if await is_serving(channel, SERVICE_NAME):
                return True
            await asyncio.sleep(0.05)
        return False


async def test_created_orders_are_returned_by_get(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    created = await create(stub, a_full_order(pet_id))

    assert created.id > 0
    assert created == a_full_order(pet_id, id=created.id)
    assert await get(stub, created.id) == created


async def test_an_order_without_status_is_placed(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    created = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1))

    assert created.status == PLACED
    assert not created.HasField("ship_date")
    assert (await get(stub, created.id)).status == PLACED


async def test_ship_dates_come_back_in_milliseconds(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    order = a_full_order(pet_id)
    order.ship_date.nanos = 123_456_789

    created = await create(stub, order)

    assert created.ship_date == Timestamp(seconds=1_795_342_530, nanos=123_000_000)
    assert (await get(stub, created.id)).ship_date == created.ship_date


async def test_a_taken_id_is_already_exists(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    await create(stub, a_full_order(pet_id, id=7))

    with fails(grpc.StatusCode.ALREADY_EXISTS, "order 7 already exists"):
        await create(stub, a_full_order(pet_id, id=7, quantity=9))
    assert (await get(stub, 7)).quantity == 2


async def test_an_order_for_an_unknown_pet_is_not_found_and_not_stored(
    stub: OrderServiceAsyncStub, pet_id: int
) -> None:
    with fails(grpc.StatusCode.NOT_FOUND, f"pet {pet_id + 1} not found"):
        await create(stub, a_full_order(pet_id + 1, id=5))

    with fails(grpc.StatusCode.NOT_FOUND, "order 5 not found"):
        await get(stub, 5)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"id": -1}, "id: must be positive"),
        ({"pet_id": 0}, "petId: must be positive"),
        ({"quantity": -1}, "quantity: must be greater than or equal to 1 and less than or equal to 1000000"),
        (
            {"quantity": 1_000_001},
            "quantity: must be greater than or equal to 1 and less than or equal to 1000000",
        ),
        ({"status": 9}, "status: must be one of placed, approved, delivered"),
        (
            {"ship_date": Timestamp(seconds=-62_135_596_801)},
            "shipDate must be a valid time between the years 1 and 9999",
        ),
    ],
)
async def test_an_invalid_order_is_invalid_argument(
    stub: OrderServiceAsyncStub, pet_id: int, changes: dict[str, object], message: str
) -> None:
    order = a_full_order(pet_id)
    for name, value in changes.items():
        if isinstance(value, Timestamp):
            order.ship_date.CopyFrom(value)
        else:
            setattr(order, name, value)

    with fails(grpc.StatusCode.INVALID_ARGUMENT, message):
        await create(stub, order)


async def test_get_and_delete_of_unknown_ids(stub: OrderServiceAsyncStub) -> None:
    with fails(grpc.StatusCode.NOT_FOUND, "order 42 not found"):
        await get(stub, 42)
    with fails(grpc.StatusCode.NOT_FOUND, "order 42 not found"):
        await stub.DeleteOrder(order_service_pb2.DeleteOrderRequest(caller=STAFF, id=42), timeout=5)
    with fails(grpc.StatusCode.INVALID_ARGUMENT, "id: must be positive"):
        await get(stub, 0)
    with fails(grpc.StatusCode.INVALID_ARGUMENT, "id: must be positive"):
        await stub.DeleteOrder(order_service_pb2.DeleteOrderRequest(caller=STAFF, id=-1), timeout=5)


async def test_delete_removes_the_order(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    created = await create(stub, a_full_order(pet_id))

    await stub.DeleteOrder(order_service_pb2.DeleteOrderRequest(caller=STAFF, id=created.id), timeout=5)

    with fails(grpc.StatusCode.NOT_FOUND, f"order {created.id} not found"):
        await get(stub, created.id)


async def test_without_the_pet_service_orders_are_unavailable_but_still_readable(
    store: MemoryOrderStore,
) -> None:
    stored = await store.create(a_full_order(3))
    address = closed_address()

    async with order_stub(store, address) as stub:
        with fails(grpc.StatusCode.UNAVAILABLE, "the pet service is unavailable"):
            await create(stub, a_full_order(3))
        assert await get(stub, stored.id) == stored
        await stub.DeleteOrder(order_service_pb2.DeleteOrderRequest(caller=STAFF, id=stored.id), timeout=5)


async def test_health_reports_serving_even_without_the_pet_service(store: MemoryOrderStore) -> None:
    async with grpc_pet_directory(
        closed_address(), timeout_seconds=2, signer=signer(ORDER_SERVICE)
    ) as directory:
        running = await start_service(build_definition(store, directory), local_settings())
        try:
            assert await wait_until_serving(f"127.0.0.1:{running.port}")
        finally:
            await running.stop(None)


async def test_a_pet_service_that_goes_away_is_unavailable_never_not_found(store: MemoryOrderStore) -> None:
    async with pet_backend() as pets:
        pet_id = await pets.add_pet()
        async with order_stub(store, pets.address) as stub:
            assert (await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1))).id == 1

            await pets.running.stop(None)

            with fails(grpc.StatusCode.UNAVAILABLE, "the pet service is unavailable"):
                await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1))
            with fails(grpc.StatusCode.UNAVAILABLE, "the pet service is unavailable"):
                await create(stub, order_pb2.Order(pet_id=pet_id + 1, quantity=1))


ANN = callers.customer(11)
BOB = callers.customer(12)


async def test_a_customers_order_is_its_own_whatever_owner_the_request_names(
    stub: OrderServiceAsyncStub, pet_id: int
) -> None:
    created = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1, owner_user_id=BOB.user_id), ANN)

    assert created.owner_user_id == ANN.user_id
    assert await get(stub, created.id, ANN) == created


async def test_a_customer_cannot_choose_an_order_id_nor_learn_whose_are_taken(
    stub: OrderServiceAsyncStub, pet_id: int
) -> None:
    bobs = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), BOB)

    # Bob's id and a free one are answered alike: a new order under an id the store draws.
    for sent in (bobs.id, 4242):
        created = await create(stub, order_pb2.Order(id=sent, pet_id=pet_id, quantity=1), ANN)
        assert created.id not in (bobs.id, 4242)
        assert created.owner_user_id == ANN.user_id
    assert await get(stub, bobs.id, BOB) == bobs
    assert (await create(stub, a_full_order(pet_id, id=4242))).id == 4242  # staff may choose


async def test_a_staff_order_belongs_to_nobody(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    created = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1, owner_user_id=ANN.user_id))

    assert not created.HasField("owner_user_id")


async def test_another_customers_order_is_not_found_exactly_like_an_absent_one(
    stub: OrderServiceAsyncStub, store: MemoryOrderStore, pet_id: int
) -> None:
    anns = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), ANN)
    absent = anns.id + 1000

    for order_id in (anns.id, absent):
        with fails(grpc.StatusCode.NOT_FOUND, f"order {order_id} not found"):
            await get(stub, order_id, BOB)
        with fails(grpc.StatusCode.NOT_FOUND, f"order {order_id} not found"):
            await delete(stub, order_id, BOB)

    assert await store.get(anns.id) == anns


async def test_a_staff_order_is_hidden_from_customers(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    staffs = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1))

    with fails(grpc.StatusCode.NOT_FOUND, f"order {staffs.id} not found"):
        await get(stub, staffs.id, ANN)


async def test_an_order_stored_without_owner_is_for_staff_only(
    stub: OrderServiceAsyncStub, store: MemoryOrderStore
) -> None:
    legacy = await store.create(order_pb2.Order(pet_id=3, quantity=1))

    with fails(grpc.StatusCode.NOT_FOUND, f"order {legacy.id} not found"):
        await get(stub, legacy.id, ANN)
    assert await get(stub, legacy.id) == legacy


async def test_a_customer_deletes_its_own_order_and_staff_any(
    stub: OrderServiceAsyncStub, pet_id: int
) -> None:
    anns = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), ANN)
    bobs = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), BOB)

    await delete(stub, anns.id, ANN)
    await delete(stub, bobs.id)

    for order_id in (anns.id, bobs.id):
        with fails(grpc.StatusCode.NOT_FOUND, f"order {order_id} not found"):
            await get(stub, order_id)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(callers.anonymous(), id="anonymous"),
        pytest.param(callers.Caller(), id="no-caller"),
        pytest.param(callers.Caller(kind=callers.customer(1).kind), id="customer-without-id"),
    ],
)
async def test_without_a_known_caller_orders_are_refused(
    stub: OrderServiceAsyncStub, store: MemoryOrderStore, pet_id: int, caller: callers.Caller
) -> None:
    stored = await store.create(order_pb2.Order(pet_id=pet_id, quantity=1))
    refused = "orders are for customers and staff: sign in first"

    with fails(grpc.StatusCode.PERMISSION_DENIED, refused):
        await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), caller)
    with fails(grpc.StatusCode.PERMISSION_DENIED, refused):
        await get(stub, stored.id, caller)
    with fails(grpc.StatusCode.PERMISSION_DENIED, refused):
        await delete(stub, stored.id, caller)
    assert await store.get(stored.id) == stored


DELIVERED = order_pb2.ORDER_STATUS_DELIVERED


async def move(
    stub: OrderServiceAsyncStub,
    order_id: int,
    status: order_pb2.OrderStatus.ValueType,
    caller: callers.Caller = STAFF,
) -> order_pb2.Order:
    request = order_service_pb2.UpdateOrderStatusRequest(id=order_id, status=status, caller=caller)
    return (await stub.UpdateOrderStatus(request, timeout=5)).order


async def test_staff_move_an_order_placed_approved_delivered(
    stub: OrderServiceAsyncStub, pet_id: int
) -> None:
    order = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), ANN)

    approved = await move(stub, order.id, APPROVED)
    delivered = await move(stub, order.id, DELIVERED)

    assert (approved.status, approved.complete) == (APPROVED, False)
    assert (delivered.status, delivered.complete) == (DELIVERED, True)
    assert await get(stub, order.id, ANN) == delivered
    assert await move(stub, order.id, DELIVERED) == delivered  # asking again changes nothing


@pytest.mark.parametrize(
    ("path", "target", "message"),
    [
        ((), DELIVERED, "is placed: it can move to approved only"),
        ((APPROVED,), PLACED, "is approved: it can move to delivered only"),
        ((APPROVED, DELIVERED), APPROVED, "is delivered: it cannot move on"),
        ((APPROVED, DELIVERED), PLACED, "is delivered: it cannot move on"),
    ],
)
async def test_every_other_move_is_refused(
    stub: OrderServiceAsyncStub,
    pet_id: int,
    path: tuple[order_pb2.OrderStatus.ValueType, ...],
    target: order_pb2.OrderStatus.ValueType,
    message: str,
) -> None:
    order = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1))
    for status in path:
        order = await move(stub, order.id, status)

    with fails(grpc.StatusCode.FAILED_PRECONDITION, f"order {order.id} {message}"):
        await move(stub, order.id, target)
    assert await get(stub, order.id) == order


@pytest.mark.parametrize("caller", [ANN, callers.anonymous()], ids=["customer", "anonymous"])
async def test_only_staff_move_orders(
    stub: OrderServiceAsyncStub, pet_id: int, caller: callers.Caller
) -> None:
    order = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), ANN)

    with fails(grpc.StatusCode.PERMISSION_DENIED, "only staff may move an order on"):
        await move(stub, order.id, APPROVED, caller)
    assert (await get(stub, order.id)).status == PLACED


@pytest.mark.parametrize(
    "fields",
    [{"status": APPROVED}, {"status": DELIVERED}, {"complete": True}],
    ids=["approved", "delivered", "complete"],
)
async def test_a_customers_new_order_is_placed_and_open(
    stub: OrderServiceAsyncStub, store: MemoryOrderStore, pet_id: int, fields: dict[str, object]
) -> None:
    with fails(
        grpc.StatusCode.INVALID_ARGUMENT,
        "a new order is placed and not complete: status and complete are set by staff",
    ):
        await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1, **fields), ANN)  # type: ignore[arg-type]
    staffs = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1, **fields))  # type: ignore[arg-type]
    assert staffs.id > 0


async def test_a_customer_cancels_only_a_placed_order(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    open_order = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), ANN)
    approved = await create(stub, order_pb2.Order(pet_id=pet_id, quantity=1), ANN)
    await move(stub, approved.id, APPROVED)

    await delete(stub, open_order.id, ANN)
    with fails(
        grpc.StatusCode.FAILED_PRECONDITION,
        f"order {approved.id} is approved: only a placed order can be cancelled",
    ):
        await delete(stub, approved.id, ANN)
    await delete(stub, approved.id)  # staff may

    for order_id in (open_order.id, approved.id):
        with fails(grpc.StatusCode.NOT_FOUND, f"order {order_id} not found"):
            await get(stub, order_id)


def keyed(
    order: order_pb2.Order, caller: callers.Caller, key: str = "k1"
) -> order_service_pb2.CreateOrderRequest:
    return order_service_pb2.CreateOrderRequest(order=order, caller=caller, idempotency_key=key)


async def test_a_retried_order_is_one_order(
    stub: OrderServiceAsyncStub, store: MemoryOrderStore, pet_id: int
) -> None:
    order = order_pb2.Order(pet_id=pet_id, quantity=2)

    first = await stub.CreateOrder(keyed(order, ANN), timeout=5)
    again = await stub.CreateOrder(keyed(order, ANN), timeout=5)
    bobs = await stub.CreateOrder(keyed(order, BOB), timeout=5)  # the same key, another caller

    assert (again.order, again.idempotent_replay) == (first.order, True)
    assert not bobs.idempotent_replay
    assert bobs.order.id != first.order.id
    with fails(
        grpc.StatusCode.FAILED_PRECONDITION, "this Idempotency-Key was already used with a different request"
    ):
        await stub.CreateOrder(keyed(order_pb2.Order(pet_id=pet_id, quantity=3), ANN), timeout=5)


async def test_twelve_racing_twins_place_one_order(stub: OrderServiceAsyncStub, pet_id: int) -> None:
    order = order_pb2.Order(pet_id=pet_id, quantity=1)

    replies = await asyncio.gather(
        *(stub.CreateOrder(keyed(order, ANN), timeout=5) for _ in range(12)), return_exceptions=True
    )

    placed = {r.order.id for r in replies if isinstance(r, order_service_pb2.CreateOrderResponse)}
    assert len(placed) == 1
    assert all(r.code() == grpc.StatusCode.ABORTED for r in replies if isinstance(r, grpc.aio.AioRpcError))


async def test_an_order_for_a_missing_pet_frees_its_key(
    stub: OrderServiceAsyncStub, pets: PetBackend
) -> None:
    missing = 987_654

    with fails(grpc.StatusCode.NOT_FOUND, f"pet {missing} not found"):
        await stub.CreateOrder(keyed(order_pb2.Order(pet_id=missing, quantity=1), ANN), timeout=5)
    await pets.add_pet(missing)
    placed = await stub.CreateOrder(keyed(order_pb2.Order(pet_id=missing, quantity=1), ANN), timeout=5)

    assert (placed.order.pet_id, placed.idempotent_replay) == (missing, False)


async def test_a_customer_holds_a_bounded_number_of_open_orders(pets: PetBackend) -> None:
    """One account cannot reserve the whole catalogue; a cancelled or delivered order makes room,
    and staff are not bound."""
    store = MemoryOrderStore()
    ann = callers.customer(7)
    pet_ids = [await pets.add_pet() for _ in range(4)]
    async with grpc_pet_directory(pets.address, timeout_seconds=2, signer=signer(ORDER_SERVICE)) as directory:
        running = await start_service(
            build_definition(store, directory, max_open_orders_per_customer=2), local_settings()
        )
        try:
            async with signed_channel(f"127.0.0.1:{running.port}") as channel:
                stub = order_service_pb2_grpc.OrderServiceStub(channel)
                first, _ = [
                    await create(stub, order_pb2.Order(pet_id=pet, quantity=1), ann) for pet in pet_ids[:2]
                ]
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await create(stub, order_pb2.Order(pet_id=pet_ids[2], quantity=1), ann)
                for _ in range(3):  # staff are not bound
                    await create(stub, order_pb2.Order(pet_id=pet_ids[3], quantity=1))
                await delete(stub, first.id, ann)
                again = await create(stub, order_pb2.Order(pet_id=pet_ids[2], quantity=1), ann)
        finally:
            await running.stop(None)

    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert refused.value.details() == (
        "a customer may have at most 2 open (placed or approved) orders: "
        "cancel one, or wait for one to be delivered"
    )
    assert dict(refused.value.trailing_metadata() or ())["retry-after"] == "60"
    assert again.owner_user_id == 7
