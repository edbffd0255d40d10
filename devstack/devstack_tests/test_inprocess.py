"""The in-process stack is the real services: they answer over gRPC, call one another, stop and
start one at a time with their data kept, and show their calls to the interceptors given."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common import callers, session_tokens
from petstore_common.caller_keys import generate
from petstore_common.caller_tokens import CallerSigner
from petstore_common.grpc_client import create_channel, is_serving
from petstore_devstack.inprocess import InProcessStack, in_process_stack

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub
    from petstore.user.v1.user_service_pb2_grpc import UserServiceAsyncStub

SECRET = "in-process-test-secret-" + "s" * 32


class MethodRecorder(grpc.aio.ServerInterceptor):
    def __init__(self) -> None:
        self.methods: list[str] = []

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        if not handler_call_details.method.startswith("/grpc.health"):
            self.methods.append(handler_call_details.method)
        return await continuation(handler_call_details)


@pytest.fixture
def recorder() -> MethodRecorder:
    return MethodRecorder()


@pytest.fixture
async def stack(recorder: MethodRecorder) -> AsyncIterator[InProcessStack]:
    async with in_process_stack(SECRET, interceptors=[recorder]) as running:
        yield running


@pytest.fixture
async def stubs(
    stack: InProcessStack,
) -> AsyncIterator[tuple[PetServiceAsyncStub, OrderServiceAsyncStub, UserServiceAsyncStub]]:
    signer = stack.gateway_signer  # the services refuse calls without a caller token
    async with (
        create_channel(stack.pet.address, signer=signer) as pet,
        create_channel(stack.order.address, signer=signer) as order,
        create_channel(stack.user.address, signer=signer) as user,
    ):
        yield (
            pet_service_pb2_grpc.PetServiceStub(pet),
            order_service_pb2_grpc.OrderServiceStub(order),
            user_service_pb2_grpc.UserServiceStub(user),
        )


async def test_the_services_answer_and_the_order_service_asks_the_pet_service(
    stubs: tuple[PetServiceAsyncStub, OrderServiceAsyncStub, UserServiceAsyncStub], recorder: MethodRecorder
) -> None:
    pets, orders, _ = stubs
    pet = (
        await pets.CreatePet(
            pet_service_pb2.CreatePetRequest(pet=pet_pb2.Pet(name="Rex"), caller=callers.staff()), timeout=5
        )
    ).pet
    placed = await orders.CreateOrder(
        order_service_pb2.CreateOrderRequest(
            order=order_pb2.Order(pet_id=pet.id, quantity=1), caller=callers.customer(7)
        ),
        timeout=5,
    )
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await orders.CreateOrder(
            order_service_pb2.CreateOrderRequest(
                order=order_pb2.Order(pet_id=pet.id + 1, quantity=1), caller=callers.customer(7)
            ),
            timeout=5,
        )

    assert placed.order.owner_user_id == 7
    assert (missing.value.code(), missing.value.details()) == (
        grpc.StatusCode.NOT_FOUND,
        f"pet {pet.id + 1} not found",
    )
    assert "/petstore.pet.v1.PetService/ReservePet" in recorder.methods
    assert "/petstore.order.v1.OrderService/CreateOrder" in recorder.methods


async def test_the_user_service_signs_sessions_with_the_secret_given(
    stubs: tuple[PetServiceAsyncStub, OrderServiceAsyncStub, UserServiceAsyncStub],
) -> None:
    _, _, users = stubs
    ann = user_pb2.User(username="ann", email="ann@example.com")
    await users.CreateUser(
        user_service_pb2.CreateUserRequest(user=ann, password="correct-horse-battery"), timeout=5
    )
    login = await users.Login(
        user_service_pb2.LoginRequest(username="ann", password="correct-horse-battery"), timeout=5
    )

    claims = session_tokens.decode(login.session_token, SECRET)
    assert claims.username == "ann"
    checked = await users.CheckSession(
        user_service_pb2.CheckSessionRequest(session_id=claims.session_id), timeout=5
    )
    assert checked.active


async def test_a_stopped_service_is_unreachable_and_comes_back_with_its_data(
    stack: InProcessStack, stubs: tuple[PetServiceAsyncStub, OrderServiceAsyncStub, UserServiceAsyncStub]
) -> None:
    pets, orders, _ = stubs
    created = await pets.CreatePet(
        pet_service_pb2.CreatePetRequest(pet=pet_pb2.Pet(name="Rex"), caller=callers.staff()), timeout=5
    )
    address = stack.pet.address
    order = order_service_pb2.CreateOrderRequest(
        order=order_pb2.Order(pet_id=created.pet.id, quantity=1), caller=callers.staff()
    )

    await stack.pet.stop()
    assert not stack.pet.running
    with pytest.raises(grpc.aio.AioRpcError) as down:
        await orders.CreateOrder(order, timeout=5)
    assert (down.value.code(), down.value.details()) == (
        grpc.StatusCode.UNAVAILABLE,
        "the pet service is unavailable",
    )

    await stack.pet.start()
    assert stack.pet.address == address
    again = await pets.GetPet(
        pet_service_pb2.GetPetRequest(id=created.pet.id), timeout=5, wait_for_ready=True
    )
    assert again.pet.name == "Rex"
    # The order service's own channel to it finds it again within its reconnect backoff (at
    # most 1 s); until then its pet look-up fails UNAVAILABLE at once, and no order is made.
    deadline = time.monotonic() + 5
    while True:
        try:
            placed = await orders.CreateOrder(order, timeout=5)
            break
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)
    assert placed.order.pet_id == created.pet.id


async def test_a_restarted_pet_service_streams_a_new_epoch(
    stack: InProcessStack, stubs: tuple[PetServiceAsyncStub, OrderServiceAsyncStub, UserServiceAsyncStub]
) -> None:
    pets, _, _ = stubs

    async def first_message() -> pet_service_pb2.WatchPetsResponse:
        stream = pets.WatchPets(pet_service_pb2.WatchPetsRequest(), wait_for_ready=True)
        message = await stream.read()
        stream.cancel()
        assert isinstance(message, pet_service_pb2.WatchPetsResponse)
        return message

    before = await first_message()
    await stack.pet.stop()
    await stack.pet.start()
    after = await first_message()

    assert before.epoch
    assert after.epoch
    assert before.epoch != after.epoch


async def test_health_reports_each_service_by_its_name(stack: InProcessStack) -> None:
    for service in (stack.pet, stack.order, stack.user):
        async with create_channel(service.address) as channel:
            assert await is_serving(channel, service.name)


async def test_the_services_refuse_callers_they_do_not_trust_as_deployed(stack: InProcessStack) -> None:
    """A call without a token, with one of a key the stack did not make, or with the order
    service's (which may not read a user) is UNAUTHENTICATED; health probes need none."""
    outsider = CallerSigner("gateway", generate().seed)
    as_order_service = stack.signer("order-service")
    request = user_service_pb2.GetUserRequest(username="ann", caller=callers.staff())
    for signer in (None, outsider, as_order_service):
        async with create_channel(stack.user.address, signer=signer) as channel:
            users: UserServiceAsyncStub = user_service_pb2_grpc.UserServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await users.GetUser(request, timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, signer
            assert await is_serving(channel, stack.user.name)  # probes need no token
