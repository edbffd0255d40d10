"""Small in-memory fakes of the three services, served by a real grpc.aio server on 127.0.0.1:0."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import jwt
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from petstore.auth.v1 import caller_pb2
from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common.grpc_server import NO_PORT_SHARING
from petstore_common.rules import enum_names
from petstore_gateway.clients import ORDER_SERVICE, PET_SERVICE, USER_SERVICE

SESSION_SECRET = "test-session-secret-" + "s" * 32
Context = grpc.aio.ServicerContext[Any, Any]
STATUS_NAMES = enum_names(pet_pb2.PetStatus)


class RequestIdRecorder(grpc.aio.ServerInterceptor):
    """Remembers the x-request-id metadata of every call."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "x-request-id" and isinstance(value, str):
                self.seen.append(value)
        return await continuation(handler_call_details)


LOSE_STREAM = object()
"""Put on a watcher's queue to end its stream with UNAVAILABLE."""

IDEMPOTENCY_SCRIPT = {
    "reused": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "this Idempotency-Key was already used with a different request",
    ),
    "busy": (
        grpc.StatusCode.ABORTED,
        "a request with this Idempotency-Key is still being processed; retry later",
    ),
}
"""Keys for which the fake pet service answers as the real one would in those cases."""


class FakePetService(pet_service_pb2_grpc.PetServiceServicer):
    """Pets in a dict, with versions. WatchPets is FAILED_PRECONDITION (no change streams)
    unless `watchable`: then every write through the service is streamed."""

    def __init__(self) -> None:
        self.watchable = False
        self.watchers: list[asyncio.Queue[object]] = []
        self.get_calls = 0
        self.pets: dict[int, pet_pb2.Pet] = {}
        self.images: list[pet_service_pb2.UploadPetImageRequest] = []
        """Every upload accepted, in order; image i (from 1) has the id f"{i:032x}"."""
        self.last_list: pet_service_pb2.ListPetsRequest | None = None
        self.callers: list[caller_pb2.Caller] = []
        """The caller of every change, in order."""
        self.keys: list[str] = []
        """The idempotency key of every create, in order."""
        self._next_id = 1000

    def add(
        self,
        pet_id: int,
        name: str,
        status: pet_pb2.PetStatus.ValueType = pet_pb2.PET_STATUS_AVAILABLE,
        tags: tuple[str, ...] = (),
    ) -> None:
        self.pets[pet_id] = pet_pb2.Pet(
            id=pet_id, name=name, status=status, tags=[pet_pb2.Tag(name=t) for t in tags], version=1
        )
        self.publish(pet_id, 1)

    def publish(self, pet_id: int, version: int, deleted: bool = False) -> None:
        for queue in self.watchers:
            queue.put_nowait(pet_service_pb2.PetChange(id=pet_id, version=version, deleted=deleted))

    def lose_watches(self) -> None:
        for queue in self.watchers:
            queue.put_nowait(LOSE_STREAM)

    async def WatchPets(
        self, request: pet_service_pb2.WatchPetsRequest, context: Context
    ) -> AsyncIterator[pet_service_pb2.WatchPetsResponse]:
        if not self.watchable:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no change streams")
        queue: asyncio.Queue[object] = asyncio.Queue()
        self.watchers.append(queue)
        try:
            yield pet_service_pb2.WatchPetsResponse()
            while True:
                item = await queue.get()
                if item is LOSE_STREAM:
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "change stream lost")
                assert isinstance(item, pet_service_pb2.PetChange)
                yield pet_service_pb2.WatchPetsResponse(changes=[item])
        finally:
            self.watchers.remove(queue)

    async def _get(self, pet_id: int, context: Context) -> pet_pb2.Pet:
        pet = self.pets.get(pet_id)
        if pet is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"pet {pet_id} not found")
        return pet

    async def GetPet(
        self, request: pet_service_pb2.GetPetRequest, context: Context
    ) -> pet_service_pb2.GetPetResponse:
        self.get_calls += 1
        return pet_service_pb2.GetPetResponse(pet=await self._get(request.id, context))

    async def FindExistingPets(
        self, request: pet_service_pb2.FindExistingPetsRequest, context: Context
    ) -> pet_service_pb2.FindExistingPetsResponse:
        # The gateway never asks this (the order service does); the fake answers it all the same.
        return pet_service_pb2.FindExistingPetsResponse(ids=sorted(set(request.ids) & self.pets.keys()))

    async def CreatePet(
        self, request: pet_service_pb2.CreatePetRequest, context: Context
    ) -> pet_service_pb2.CreatePetResponse:
        self.callers.append(request.caller)
        if request.caller.kind != caller_pb2.CALLER_KIND_STAFF:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "only staff may change the catalogue")
        self.keys.append(request.idempotency_key)
        scripted = IDEMPOTENCY_SCRIPT.get(request.idempotency_key)
        if scripted is not None:
            await context.abort(*scripted)
        pet = pet_pb2.Pet()
        pet.CopyFrom(request.pet)
        if not pet.name:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "name must not be empty")
        if pet.HasField("id"):
            if pet.id in self.pets:
                await context.abort(grpc.StatusCode.ALREADY_EXISTS, f"pet {pet.id} already exists")
        else:
            self._next_id += 1
            pet.id = self._next_id
        pet.version = 1
        self.pets[pet.id] = pet
        self.publish(pet.id, 1)
        return pet_service_pb2.CreatePetResponse(
            pet=pet, idempotent_replay=request.idempotency_key == "replay"
        )

    async def UpdatePet(
        self, request: pet_service_pb2.UpdatePetRequest, context: Context
    ) -> pet_service_pb2.UpdatePetResponse:
        self.callers.append(request.caller)
        if request.caller.kind != caller_pb2.CALLER_KIND_STAFF:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "only staff may change the catalogue")
        stored = await self._get(request.pet.id, context)
        if request.HasField("precondition") and stored.version not in request.precondition.versions:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION, f"pet {stored.id} was changed since the version given"
            )
        version = stored.version + 1
        if not request.update_mask.paths:
            if not request.pet.name:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "name must not be empty")
            stored.CopyFrom(request.pet)
        for path in request.update_mask.paths:
            if path == "name" and not request.pet.name:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "name must not be empty")
            setattr(stored, path, getattr(request.pet, path))
        stored.version = version
        self.publish(stored.id, version)
        return pet_service_pb2.UpdatePetResponse(pet=stored)

    async def DeletePet(
        self, request: pet_service_pb2.DeletePetRequest, context: Context
    ) -> pet_service_pb2.DeletePetResponse:
        self.callers.append(request.caller)
        if request.caller.kind != caller_pb2.CALLER_KIND_STAFF:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "only staff may change the catalogue")
        stored = await self._get(request.id, context)
        del self.pets[request.id]
        self.publish(request.id, stored.version, deleted=True)
        return pet_service_pb2.DeletePetResponse()

    async def ListPets(
        self, request: pet_service_pb2.ListPetsRequest, context: Context
    ) -> pet_service_pb2.ListPetsResponse:
        self.last_list = request
        after = 0
        if request.page_token:
            if not request.page_token.isdigit():
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid page token")
            after = int(request.page_token)
        matches = [
            pet
            for pet_id, pet in sorted(self.pets.items())
            if pet_id > after
            and (pet.status in request.statuses or any(t.name in request.tag_names for t in pet.tags))
        ]
        page = matches[: request.page_size]
        token = str(page[-1].id) if len(matches) > len(page) else ""
        return pet_service_pb2.ListPetsResponse(pets=page, next_page_token=token)

    async def GetInventory(
        self, request: pet_service_pb2.GetInventoryRequest, context: Context
    ) -> pet_service_pb2.GetInventoryResponse:
        counts: dict[str, int] = {}
        for pet in self.pets.values():
            name = STATUS_NAMES.get(pet.status)
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
        return pet_service_pb2.GetInventoryResponse(counts=counts)

    async def UploadPetImage(
        self, request: pet_service_pb2.UploadPetImageRequest, context: Context
    ) -> pet_service_pb2.UploadPetImageResponse:
        self.callers.append(request.caller)
        if request.caller.kind != caller_pb2.CALLER_KIND_STAFF:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "only staff may change the catalogue")
        await self._get(request.pet_id, context)
        if not request.content_type.startswith("image/"):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the file must be an image")
        pet = await self._get(request.pet_id, context)
        if len([image for image in self.images if image.pet_id == request.pet_id]) >= 2:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION, f"pet {request.pet_id} has 2 images already"
            )
        self.images.append(request)
        image_id = f"{len(self.images):032x}"
        photo_url = f"{request.images_base_url}/{image_id}"
        pet.photo_urls.append(photo_url)
        pet.version += 1
        self.publish(pet.id, pet.version)
        return pet_service_pb2.UploadPetImageResponse(
            image_id=image_id,
            size_bytes=len(request.data),
            media_type=request.content_type,
            photo_url=photo_url,
            pet=pet,
        )

    async def GetPetImage(
        self, request: pet_service_pb2.GetPetImageRequest, context: Context
    ) -> pet_service_pb2.GetPetImageResponse:
        """Anyone; the image must be this pet's (the media type stored is the one uploaded here)."""
        index = int(request.image_id, 16) - 1 if request.image_id.isalnum() else -1
        if not 0 <= index < len(self.images) or self.images[index].pet_id != request.pet_id:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"pet {request.pet_id} has no image {request.image_id}"
            )
        image = self.images[index]
        return pet_service_pb2.GetPetImageResponse(media_type=image.content_type, data=image.data)


class FakeOrderService(order_service_pb2_grpc.OrderServiceServicer):
    def __init__(self, pets: FakePetService) -> None:
        self.pets = pets
        self.orders: dict[int, order_pb2.Order] = {}
        self.pet_service_down = False
        self.callers: list[caller_pb2.Caller] = []
        """The caller of every call, in order."""
        self.last_list: order_service_pb2.ListOrdersRequest | None = None
        self._next_id = 0

    async def CreateOrder(
        self, request: order_service_pb2.CreateOrderRequest, context: Context
    ) -> order_service_pb2.CreateOrderResponse:
        self.callers.append(request.caller)
        if self.pet_service_down:
            # Internals in the details: the gateway must not pass them on.
            await context.abort(grpc.StatusCode.UNAVAILABLE, "connect to 10.1.2.3:50051 failed: Traceback")
        order = order_pb2.Order()
        order.CopyFrom(request.order)
        if order.pet_id not in self.pets.pets:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"pet {order.pet_id} not found")
        if order.quantity > 1_000_000:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "quantity must be at most 1000000")
        if not order.HasField("id"):
            self._next_id += 1
            order.id = self._next_id
        self.orders[order.id] = order
        return order_service_pb2.CreateOrderResponse(order=order)

    async def GetOrder(
        self, request: order_service_pb2.GetOrderRequest, context: Context
    ) -> order_service_pb2.GetOrderResponse:
        self.callers.append(request.caller)
        order = self.orders.get(request.id)
        if order is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"order {request.id} not found")
        return order_service_pb2.GetOrderResponse(order=order)

    async def DeleteOrder(
        self, request: order_service_pb2.DeleteOrderRequest, context: Context
    ) -> order_service_pb2.DeleteOrderResponse:
        self.callers.append(request.caller)
        if self.orders.pop(request.id, None) is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"order {request.id} not found")
        return order_service_pb2.DeleteOrderResponse()

    async def ListOrders(
        self, request: order_service_pb2.ListOrdersRequest, context: Context
    ) -> order_service_pb2.ListOrdersResponse:
        """The order service's rule: a customer's own orders (another owner's is refused), staff
        any; the page token is the last id (enough for the gateway's tests)."""
        self.callers.append(request.caller)
        self.last_list = request
        owner: int | None = request.owner_user_id if request.HasField("owner_user_id") else None
        if request.caller.kind == caller_pb2.CALLER_KIND_CUSTOMER:
            if owner is not None and owner != request.caller.user_id:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, "a customer lists only its own orders")
            owner = request.caller.user_id
        elif request.caller.kind != caller_pb2.CALLER_KIND_STAFF:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "sign in first")
        after = int(request.page_token) if request.page_token.isdigit() else 0
        matches = [
            order
            for order_id, order in sorted(self.orders.items())
            if order_id > after
            and (not request.statuses or order.status in request.statuses)
            and (not request.HasField("pet_id") or order.pet_id == request.pet_id)
            and (owner is None or (order.HasField("owner_user_id") and order.owner_user_id == owner))
        ]
        page = matches[: request.page_size]
        token = str(page[-1].id) if len(matches) > len(page) else ""
        return order_service_pb2.ListOrdersResponse(orders=page, next_page_token=token)

    async def UpdateOrderStatus(
        self, request: order_service_pb2.UpdateOrderStatusRequest, context: Context
    ) -> order_service_pb2.UpdateOrderStatusResponse:
        """Staff only; placed may become approved, nothing else (enough for the gateway's tests)."""
        self.callers.append(request.caller)
        if request.caller.kind != caller_pb2.CALLER_KIND_STAFF:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "only staff may move an order on")
        order = self.orders.get(request.id)
        if order is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"order {request.id} not found")
        if (order.status, request.status) != (order_pb2.ORDER_STATUS_PLACED, order_pb2.ORDER_STATUS_APPROVED):
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"order {request.id} cannot move there")
        order.status = request.status
        return order_service_pb2.UpdateOrderStatusResponse(order=order)


@dataclass
class StoredUser:
    user: user_pb2.User
    password: str


@dataclass
class FakeUserService(user_service_pb2_grpc.UserServiceServicer):
    users: dict[str, StoredUser] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)
    check_calls: int = 0
    last_caller: caller_pb2.Caller | None = None
    _next_id: int = 0

    def _validate(self, request: user_service_pb2.CreateUserRequest) -> str | None:
        if request.user.username in self.users:
            return f"username {request.user.username} is taken"
        if request.user.email.count("@") != 1:
            return "email must look like an email"
        return None

    def _store(self, request: user_service_pb2.CreateUserRequest) -> user_pb2.User:
        user = user_pb2.User()
        user.CopyFrom(request.user)
        self._next_id += 1
        user.id = self._next_id
        self.users[user.username] = StoredUser(user, request.password)
        return user

    async def CreateUser(
        self, request: user_service_pb2.CreateUserRequest, context: Context
    ) -> user_service_pb2.CreateUserResponse:
        self.last_caller = request.caller
        problem = self._validate(request)
        if problem is not None:
            code = grpc.StatusCode.ALREADY_EXISTS if "taken" in problem else grpc.StatusCode.INVALID_ARGUMENT
            await context.abort(code, problem)
        return user_service_pb2.CreateUserResponse(user=self._store(request))

    async def CreateUsers(
        self, request: user_service_pb2.CreateUsersRequest, context: Context
    ) -> user_service_pb2.CreateUsersResponse:
        self.last_caller = request.caller
        if request.caller.kind != caller_pb2.CALLER_KIND_STAFF:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "only staff may create users in bulk")
        names = [item.user.username for item in request.users]
        for index, item in enumerate(request.users):
            problem = self._validate(item) or (
                "duplicate username" if names.index(item.user.username) != index else None
            )
            if problem is not None:
                # Like the user service: a taken username is a conflict, anything else invalid.
                code = (
                    grpc.StatusCode.ALREADY_EXISTS if "taken" in problem else grpc.StatusCode.INVALID_ARGUMENT
                )
                await context.abort(code, f"users[{index}]: {problem}")
        return user_service_pb2.CreateUsersResponse(users=[self._store(item) for item in request.users])

    def open_session(self, user_id: int, username: str) -> str:
        """A live session token of a customer, as if it had logged in."""
        token, _ = issue_token(user_id, username)
        self.sessions.add(jwt.decode(token, options={"verify_signature": False})["jti"])
        return token

    async def _find(self, username: str, context: Context) -> StoredUser:
        stored = self.users.get(username)
        if stored is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"user {username} not found")
        return stored

    async def _check_caller(self, stored: StoredUser, caller: caller_pb2.Caller, context: Context) -> None:
        self.last_caller = caller
        if not _may_see(caller, stored.user.id):
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED, "only staff or the user itself may change this user"
            )

    async def GetUser(
        self, request: user_service_pb2.GetUserRequest, context: Context
    ) -> user_service_pb2.GetUserResponse:
        self.last_caller = request.caller
        user = (await self._find(request.username, context)).user
        if _may_see(request.caller, user.id):
            return user_service_pb2.GetUserResponse(user=user, view=user_service_pb2.USER_VIEW_FULL)
        public = user_pb2.User(id=user.id, username=user.username)
        return user_service_pb2.GetUserResponse(user=public, view=user_service_pb2.USER_VIEW_PUBLIC)

    async def UpdateUser(
        self, request: user_service_pb2.UpdateUserRequest, context: Context
    ) -> user_service_pb2.UpdateUserResponse:
        stored = await self._find(request.username, context)
        await self._check_caller(stored, request.caller, context)
        if request.HasField("precondition") and stored.user.version not in request.precondition.versions:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"user {request.username} was changed")
        if request.user.username != request.username and request.user.username in self.users:
            await context.abort(grpc.StatusCode.ALREADY_EXISTS, f"username {request.user.username} is taken")
        user = user_pb2.User()
        user.CopyFrom(request.user)
        user.id = stored.user.id
        user.version = stored.user.version + 1
        del self.users[request.username]
        password = request.password if request.HasField("password") else stored.password
        self.users[user.username] = StoredUser(user, password)
        return user_service_pb2.UpdateUserResponse(user=user)

    async def DeleteUser(
        self, request: user_service_pb2.DeleteUserRequest, context: Context
    ) -> user_service_pb2.DeleteUserResponse:
        stored = await self._find(request.username, context)
        await self._check_caller(stored, request.caller, context)
        del self.users[request.username]
        return user_service_pb2.DeleteUserResponse()

    async def Login(
        self, request: user_service_pb2.LoginRequest, context: Context
    ) -> user_service_pb2.LoginResponse:
        stored = await self._find(request.username, context)
        if stored.password != request.password:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "invalid username/password supplied")
        token, expires = issue_token(stored.user.id, stored.user.username)
        self.sessions.add(jwt.decode(token, options={"verify_signature": False})["jti"])
        reply = user_service_pb2.LoginResponse(session_token=token)
        reply.expire_time.FromSeconds(expires)
        return reply

    async def Logout(
        self, request: user_service_pb2.LogoutRequest, context: Context
    ) -> user_service_pb2.LogoutResponse:
        claims = jwt.decode(request.session_token, SESSION_SECRET, algorithms=["HS256"])
        self.sessions.discard(claims["jti"])
        return user_service_pb2.LogoutResponse()

    async def CheckSession(
        self, request: user_service_pb2.CheckSessionRequest, context: Context
    ) -> user_service_pb2.CheckSessionResponse:
        self.check_calls += 1
        return user_service_pb2.CheckSessionResponse(active=request.session_id in self.sessions)


def _may_see(caller: caller_pb2.Caller, user_id: int) -> bool:
    """The user service's rule, as far as the gateway's tests need it."""
    if caller.kind == caller_pb2.CALLER_KIND_STAFF:
        return True
    return caller.kind == caller_pb2.CALLER_KIND_CUSTOMER and caller.user_id == user_id


def issue_token(
    user_id: int,
    username: str,
    *,
    ttl_seconds: int = 3600,
    secret: str = SESSION_SECRET,
    algorithm: str = "HS256",
    omit: tuple[str, ...] = (),
) -> tuple[str, int]:
    """A session token like the user service's; `omit` drops claims to test what is required."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": str(user_id),
        "name": username,
        "iat": now,
        "exp": now + ttl_seconds,
        "jti": uuid.uuid4().hex,
    }
    for claim in omit:
        del claims[claim]
    return jwt.encode(claims, secret, algorithm=algorithm), now + ttl_seconds


@dataclass
class FakeBackend:
    """All three fake services on one server: the gateway's three addresses all point at it."""

    server: grpc.aio.Server
    port: int
    pet: FakePetService
    order: FakeOrderService
    user: FakeUserService
    recorder: RequestIdRecorder
    health: health.aio.HealthServicer

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


async def start_backend() -> FakeBackend:
    recorder = RequestIdRecorder()
    server = grpc.aio.server(interceptors=[recorder], options=NO_PORT_SHARING)
    pet = FakePetService()
    order = FakeOrderService(pet)
    user = FakeUserService()
    pet_service_pb2_grpc.add_PetServiceServicer_to_server(pet, server)
    order_service_pb2_grpc.add_OrderServiceServicer_to_server(order, server)
    user_service_pb2_grpc.add_UserServiceServicer_to_server(user, server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in (PET_SERVICE, ORDER_SERVICE, USER_SERVICE):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return FakeBackend(server, port, pet, order, user, recorder, health_servicer)
