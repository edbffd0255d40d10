"""A new order's defaults (quantity 1, status placed, complete false) are the order service's:
read from order.proto's `default_value` options and given to a field the request leaves out.
Tested through the gRPC API, as a client that sends the bare minimum, and as one that writes
the wire bytes itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
import pytest

from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import ORDER_SERVICE
from petstore_common.caller_testing import signed_channel, signer
from petstore_common.caller_tokens import CallerClaims
from petstore_common.grpc_server import start_service
from petstore_order.defaults import DEFAULT_QUANTITY, DEFAULT_STATUS
from petstore_order.pets import grpc_pet_directory
from petstore_order.service import build_definition
from petstore_order.storage.memory import MemoryOrderStore

from .pet_backend import PetBackend, local_settings
from .test_servicer import create, fails, get

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub

STAFF = callers.staff()
ANN = callers.customer(11)
PLACED = order_pb2.ORDER_STATUS_PLACED
CREATE_ORDER = "/petstore.order.v1.OrderService/CreateOrder"
QUANTITY_OUT_OF_RANGE = "quantity: must be greater than or equal to 1 and less than or equal to 1000000"


@pytest.fixture
async def address(store: MemoryOrderStore, pets: PetBackend) -> AsyncIterator[str]:
    """The order service's address (over `store`, asking `pets`)."""
    async with grpc_pet_directory(pets.address, timeout_seconds=2, signer=signer(ORDER_SERVICE)) as directory:
        running = await start_service(build_definition(store, directory), local_settings())
        try:
            yield f"127.0.0.1:{running.port}"
        finally:
            await running.stop(None)


@pytest.fixture
async def stub(address: str) -> AsyncIterator[OrderServiceAsyncStub]:
    async with signed_channel(address) as channel:
        yield order_service_pb2_grpc.OrderServiceStub(channel)


def test_the_defaults_are_the_contracts() -> None:
    assert (DEFAULT_QUANTITY, DEFAULT_STATUS) == (1, PLACED)


@pytest.mark.parametrize("caller", [STAFF, ANN], ids=["staff", "customer"])
async def test_an_order_without_quantity_or_status_is_stored_with_the_defaults(
    stub: OrderServiceAsyncStub, pets: PetBackend, store: MemoryOrderStore, caller: callers.Caller
) -> None:
    pet_id = await pets.add_pet()

    created = await create(stub, order_pb2.Order(pet_id=pet_id), caller)

    expected = (pet_id, 1, PLACED, False)
    assert (created.pet_id, created.quantity, created.status, created.complete) == expected
    read = await get(stub, created.id)
    assert (read.pet_id, read.quantity, read.status, read.complete) == expected
    stored = await store.get(created.id)  # what is kept, not only what is answered
    assert (stored.quantity, stored.status) == (1, PLACED)


async def test_given_values_are_kept(stub: OrderServiceAsyncStub, pets: PetBackend) -> None:
    pet_id = await pets.add_pet()

    created = await create(
        stub, order_pb2.Order(pet_id=pet_id, quantity=7, status=order_pb2.ORDER_STATUS_APPROVED)
    )

    assert (created.quantity, created.status) == (7, order_pb2.ORDER_STATUS_APPROVED)


async def _create_raw(address: str, request: order_service_pb2.CreateOrderRequest, order: bytes) -> bytes:
    """CreateOrder with the order's bytes written by hand (a client the generated code does not
    hold back), signed as the gateway vouching for the request's caller."""
    body = request.SerializeToString() + _field(1, order)  # a second `order` merges into the first
    metadata = (signer().metadata(CREATE_ORDER, CallerClaims.of_request(request) or CallerClaims()),)
    async with grpc.aio.insecure_channel(address) as channel:
        call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            CREATE_ORDER, request_serializer=None, response_deserializer=None
        )
        response: bytes = await call(body, metadata=metadata, timeout=5)
    return response


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2); payloads here are shorter than 128 bytes."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


async def test_a_quantity_of_zero_written_on_the_wire_is_absent_and_gets_the_default(
    address: str, pets: PetBackend, store: MemoryOrderStore
) -> None:
    """quantity is a proto3 field without presence: a 0 a client writes explicitly (tag 3,
    value 0, bytes no generated code sends) is the same as leaving it out."""
    pet_id = await pets.add_pet()
    request = order_service_pb2.CreateOrderRequest(order=order_pb2.Order(pet_id=pet_id), caller=STAFF)

    reply = await _create_raw(address, request, b"\x18\x00")

    created = order_service_pb2.CreateOrderResponse.FromString(reply).order
    assert (created.quantity, (await store.get(created.id)).quantity) == (1, 1)


@pytest.mark.parametrize("quantity", [-1, -(2**31), 1_000_001])
async def test_a_quantity_out_of_range_is_refused_not_defaulted(
    stub: OrderServiceAsyncStub, pets: PetBackend, store: MemoryOrderStore, quantity: int
) -> None:
    pet_id = await pets.add_pet()

    with fails(grpc.StatusCode.INVALID_ARGUMENT, QUANTITY_OUT_OF_RANGE):
        await create(stub, order_pb2.Order(pet_id=pet_id, quantity=quantity))

    assert await store.find(statuses=(), pet_id=None, owner_user_id=None, after_id=0, limit=10) == []


async def test_a_retry_that_spells_out_the_defaults_replays_the_first_order(
    stub: OrderServiceAsyncStub, pets: PetBackend, store: MemoryOrderStore
) -> None:
    """One Idempotency-Key, sent once without quantity and status and once with them filled in
    (a retry through a gateway of another release): the same order, placed once."""
    pet_id = await pets.add_pet()
    bare = order_pb2.Order(pet_id=pet_id)
    spelled_out = order_pb2.Order(pet_id=pet_id, quantity=1, status=PLACED, complete=False)

    def keyed(order: order_pb2.Order) -> order_service_pb2.CreateOrderRequest:
        return order_service_pb2.CreateOrderRequest(order=order, caller=ANN, idempotency_key="retry-1")

    first = await stub.CreateOrder(keyed(bare), timeout=5)
    again = await stub.CreateOrder(keyed(spelled_out), timeout=5)
    once_more = await stub.CreateOrder(keyed(bare), timeout=5)

    assert (first.idempotent_replay, again.idempotent_replay, once_more.idempotent_replay) == (
        False,
        True,
        True,
    )
    assert again.order == first.order == once_more.order
    stored = await store.find(statuses=(), pet_id=None, owner_user_id=None, after_id=0, limit=10)
    assert [order.id for order in stored] == [first.order.id]


async def test_a_different_quantity_under_the_same_key_is_still_another_request(
    stub: OrderServiceAsyncStub, pets: PetBackend
) -> None:
    """Filling the defaults in does not blur requests that differ: 2 is not the default."""
    pet_id = await pets.add_pet()
    key = "retry-2"

    await stub.CreateOrder(
        order_service_pb2.CreateOrderRequest(
            order=order_pb2.Order(pet_id=pet_id), caller=ANN, idempotency_key=key
        ),
        timeout=5,
    )
    with fails(
        grpc.StatusCode.FAILED_PRECONDITION, "this Idempotency-Key was already used with a different request"
    ):
        await stub.CreateOrder(
            order_service_pb2.CreateOrderRequest(
                order=order_pb2.Order(pet_id=pet_id, quantity=2), caller=ANN, idempotency_key=key
            ),
            timeout=5,
        )
