"""The services behind the gateway under test: the real ones, in this process, on their embedded
stores (petstore_devstack.inprocess), and a fake webhook service (webhooks.py). Tests seed and read
back state over the services' own gRPC API, as staff, and see which calls reached a service
through a server interceptor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import grpc

from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common import callers, session_tokens
from petstore_common.grpc_client import create_channel
from petstore_common.rules import field_rules
from petstore_devstack.inprocess import InProcessService, InProcessStack, in_process_stack
from petstore_gateway.clients import ORDER, PET, USER, ServiceClients

from .webhooks import FakeWebhookService, fake_webhook_service

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub
    from petstore.user.v1.user_service_pb2_grpc import UserServiceAsyncStub

MAX_IDS_PER_CHECK = field_rules(pet_service_pb2.FindExistingPetsRequest, "ids").repeated.max_items
SESSION_SECRET = "test-session-secret-" + "s" * 32
PASSWORD = "correct-horse-battery"
"""Every seeded user's password unless a test says otherwise (the user service refuses short
and common ones)."""
AVAILABLE = pet_pb2.PET_STATUS_AVAILABLE
PLACED, APPROVED, DELIVERED = (
    order_pb2.ORDER_STATUS_PLACED,
    order_pb2.ORDER_STATUS_APPROVED,
    order_pb2.ORDER_STATUS_DELIVERED,
)
_STEPS = {APPROVED: (APPROVED,), DELIVERED: (APPROVED, DELIVERED)}
"""The moves from placed (how every order starts) to a status."""


@dataclass(frozen=True, slots=True)
class Call:
    """One call as it arrived at a service."""

    method: str
    """/package.Service/Method"""
    request_id: str | None
    """Its x-request-id metadata."""


class CallRecorder(grpc.aio.ServerInterceptor):
    """Every call that reached one of the services (health checks aside), in arrival order; and
    calls of a method held back on request, to catch a service in the middle of something."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._held: dict[str, asyncio.Event] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method: str = handler_call_details.method
        if not method.startswith("/grpc.health"):
            metadata = dict(handler_call_details.invocation_metadata or ())
            request_id = metadata.get("x-request-id")
            self.calls.append(Call(method, request_id if isinstance(request_id, str) else None))
        handler = await continuation(handler_call_details)
        gate = next((gate for name, gate in self._held.items() if method.endswith(f".{name}")), None)
        if gate is None or handler is None or handler.unary_unary is None:
            return handler
        # The aio server keeps coroutine functions there (the stubs describe the sync API).
        behaviour = cast("Callable[[Any, Any], Awaitable[Any]]", handler.unary_unary)

        async def held(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            await gate.wait()
            return await behaviour(request, context)

        return grpc.unary_unary_rpc_method_handler(
            held,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    def hold(self, method: str) -> asyncio.Event:
        """Calls of `method` (Service/Method) arriving from now on wait until the event is set."""
        gate = asyncio.Event()
        self._held[method] = gate
        return gate

    def of(self, method: str) -> list[Call]:
        """The calls of `method`, named as Service/Method (e.g. PetService/GetPet)."""
        return [call for call in self.calls if call.method.endswith(f".{method}")]

    def count(self, method: str) -> int:
        return len(self.of(method))

    def to(self, service: str) -> list[str]:
        """The methods called on `service` (e.g. PetService), in order."""
        prefix = f".{service}/"
        return [call.method.split("/")[-1] for call in self.calls if prefix in call.method]

    def clear(self) -> None:
        self.calls.clear()


async def until(condition: Callable[[], object], seconds: float = 5.0) -> None:
    """Wait for `condition` to hold (the services and the gateway work on other tasks)."""
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 - nothing signals it: polled, as a client would
            await asyncio.sleep(0.005)


@dataclass(eq=False)
class Backend:
    """The running services (`stack`: stop one, reach a store), the calls they saw, and staff's
    stubs to each, with which the helpers below seed and read back state."""

    stack: InProcessStack
    calls: CallRecorder
    pets: PetServiceAsyncStub
    orders: OrderServiceAsyncStub
    users: UserServiceAsyncStub
    webhook_service: InProcessService[FakeWebhookService]
    """The fake webhook service (its `store` is the fake: seed endpoints and attempts there)."""

    @property
    def webhooks(self) -> FakeWebhookService:
        return self.webhook_service.store

    def clients(self, **addresses: str) -> ServiceClients:
        """The gateway's channels to the four services (`pet_addr=...` etc. override one)."""
        chosen = {
            "pet_addr": self.stack.pet.address,
            "order_addr": self.stack.order.address,
            "user_addr": self.stack.user.address,
            "webhook_addr": self.webhook_service.address,
            **addresses,
        }
        return ServiceClients.connect(**chosen, signer=self.stack.gateway_signer)

    # Pets --------------------------------------------------------------------------------

    async def add_pet(
        self,
        pet_id: int | None = None,
        name: str = "Rex",
        status: pet_pb2.PetStatus.ValueType = AVAILABLE,
        tags: tuple[str, ...] = (),
    ) -> pet_pb2.Pet:
        """A pet created by staff (under `pet_id` when given)."""
        pet = pet_pb2.Pet(name=name, status=status, tags=[pet_pb2.Tag(name=tag) for tag in tags])
        if pet_id is not None:
            pet.id = pet_id
        request = pet_service_pb2.CreatePetRequest(pet=pet, caller=callers.staff())
        return (await self.pets.CreatePet(request, timeout=5)).pet

    async def pet(self, pet_id: int) -> pet_pb2.Pet:
        """The pet as the pet service has it (AssertionError when it has none)."""
        try:
            return (await self.pets.GetPet(pet_service_pb2.GetPetRequest(id=pet_id), timeout=5)).pet
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                raise AssertionError(f"the pet service has no pet {pet_id}") from None
            raise

    async def pet_ids(self) -> list[int]:
        """Every pet's id among the first thousand: the store draws ids from 1, and the tests'
        own ids are small."""
        question = pet_service_pb2.FindExistingPetsRequest(ids=range(1, MAX_IDS_PER_CHECK + 1))
        return list((await self.pets.FindExistingPets(question, timeout=5)).ids)

    async def change_pet(self, pet: pet_pb2.Pet) -> pet_pb2.Pet:
        """A change made by staff behind the gateway's back (through another gateway)."""
        request = pet_service_pb2.UpdatePetRequest(pet=pet, caller=callers.staff())
        return (await self.pets.UpdatePet(request, timeout=5)).pet

    # Orders ------------------------------------------------------------------------------

    async def add_order(
        self,
        pet_id: int,
        *,
        owner: int | None = None,
        order_id: int | None = None,
        status: order_pb2.OrderStatus.ValueType = PLACED,
        quantity: int = 1,
    ) -> order_pb2.Order:
        """An order for an existing pet, placed by customer `owner` (the store draws its id) or
        by staff (nobody's; under `order_id` when given), then moved on by staff to `status`."""
        order = order_pb2.Order(pet_id=pet_id, quantity=quantity)
        if owner is None:
            caller = callers.staff()
            if order_id is not None:
                order.id = order_id
        else:
            assert order_id is None, "only staff choose an order's id"
            caller = callers.customer(owner)
        request = order_service_pb2.CreateOrderRequest(order=order, caller=caller)
        placed = (await self.orders.CreateOrder(request, timeout=5)).order
        for step in _STEPS.get(status, ()):
            moved = order_service_pb2.UpdateOrderStatusRequest(
                id=placed.id, status=step, caller=callers.staff()
            )
            placed = (await self.orders.UpdateOrderStatus(moved, timeout=5)).order
        return placed

    async def order(self, order_id: int) -> order_pb2.Order:
        """The order as staff see it (AssertionError when there is none)."""
        try:
            request = order_service_pb2.GetOrderRequest(id=order_id, caller=callers.staff())
            return (await self.orders.GetOrder(request, timeout=5)).order
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                raise AssertionError(f"the order service has no order {order_id}") from None
            raise

    async def all_orders(self) -> list[order_pb2.Order]:
        """Every order (the first page of a thousand), as staff see them."""
        request = order_service_pb2.ListOrdersRequest(caller=callers.staff(), page_size=1000)
        return list((await self.orders.ListOrders(request, timeout=5)).orders)

    # Users -------------------------------------------------------------------------------

    async def add_user(
        self, username: str, user_id: int | None = None, password: str = PASSWORD, **fields: Any
    ) -> user_pb2.User:
        """An account created by staff (under `user_id` when given), email username@example.com."""
        user = user_pb2.User(username=username, email=f"{username}@example.com", **fields)
        if user_id is not None:
            user.id = user_id
        request = user_service_pb2.CreateUserRequest(user=user, password=password, caller=callers.staff())
        return (await self.users.CreateUser(request, timeout=5)).user

    async def user(self, username: str) -> user_pb2.User:
        """The full record, as staff see it (AssertionError when there is no such user)."""
        user = await self.find_user(username)
        if user is None:
            raise AssertionError(f"the user service has no user {username}")
        return user

    async def find_user(self, username: str) -> user_pb2.User | None:
        try:
            request = user_service_pb2.GetUserRequest(username=username, caller=callers.staff())
            return (await self.users.GetUser(request, timeout=5)).user
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return None
            raise

    async def login(self, username: str, password: str = PASSWORD) -> str:
        """A fresh session token, as the user service issues it at login."""
        request = user_service_pb2.LoginRequest(username=username, password=password)
        return (await self.users.Login(request, timeout=5)).session_token

    async def customer(self, username: str, user_id: int | None = None) -> str:
        """A new customer account, logged in: its session token."""
        await self.add_user(username, user_id)
        return await self.login(username)

    async def logout(self, token: str) -> None:
        """The session ends elsewhere: a logout through another gateway."""
        await self.users.Logout(user_service_pb2.LogoutRequest(session_token=token), timeout=5)

    async def session_active(self, token: str) -> bool:
        """What the user service says of the token's session."""
        session_id = session_tokens.decode(token, SESSION_SECRET).session_id
        request = user_service_pb2.CheckSessionRequest(session_id=session_id)
        return (await self.users.CheckSession(request, timeout=5)).active

    async def delete_user(self, username: str) -> None:
        request = user_service_pb2.DeleteUserRequest(username=username, caller=callers.staff())
        await self.users.DeleteUser(request, timeout=5)


@asynccontextmanager
async def running_backend(
    *, interceptors: tuple[grpc.aio.ServerInterceptor, ...] = (), **options: Any
) -> AsyncIterator[Backend]:
    """The three services, the fake webhook service, and staff stubs to the three; `options` go
    to in_process_stack."""
    recorder = CallRecorder()
    async with AsyncExitStack() as cleanup:
        stack = await cleanup.enter_async_context(
            in_process_stack(SESSION_SECRET, interceptors=(recorder, *interceptors), **options)
        )
        signer = stack.gateway_signer  # staff's stubs call as the gateway does
        pet = await cleanup.enter_async_context(create_channel(stack.pet.address, (PET,), signer=signer))
        order = await cleanup.enter_async_context(
            create_channel(stack.order.address, (ORDER,), signer=signer)
        )
        user = await cleanup.enter_async_context(create_channel(stack.user.address, (USER,), signer=signer))
        webhook = fake_webhook_service(FakeWebhookService(), stack.caller_keys, (recorder, *interceptors))
        cleanup.push_async_callback(webhook.stop)
        await webhook.start()
        yield Backend(
            stack,
            recorder,
            pet_service_pb2_grpc.PetServiceStub(pet),
            order_service_pb2_grpc.OrderServiceStub(order),
            user_service_pb2_grpc.UserServiceStub(user),
            webhook,
        )
