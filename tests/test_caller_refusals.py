"""The services believe a request's caller only when a caller token from a trusted deployable
vouches for it: tried here as a compromised pod would, against the real servicers on real gRPC
servers on loopback (the pet service trusts the gateway, the order service and the webhook service;
the order service the gateway and the webhook service; the user service the gateway alone, as
deployed)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from argon2 import Parameters, Type
from prometheus_client import REGISTRY

from petstore.auth.v1 import caller_pb2
from petstore.order.v1 import order_service_pb2, order_service_pb2_grpc
from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import GATEWAY, ORDER_SERVICE, WEBHOOK_SERVICE
from petstore_common.caller_keys import generate
from petstore_common.caller_testing import KEYS, signer, trusting_env
from petstore_common.caller_tokens import BEARER, METADATA_KEY, CallerClaims, CallerSigner
from petstore_common.grpc_client import create_channel
from petstore_common.grpc_server import RunningService, start_service
from petstore_common.settings import ServiceSettings
from petstore_order import service as order_service
from petstore_order.pets import grpc_pet_directory
from petstore_order.storage.memory import MemoryOrderStore
from petstore_pet import service as pet_service
from petstore_pet.storage.memory import MemoryPetStore
from petstore_user import service as user_service
from petstore_user.passwords import Passwords
from petstore_user.sessions import SessionTokens
from petstore_user.storage.memory import MemoryUserStore

PET = "petstore.pet.v1.PetService"
ORDER = "petstore.order.v1.OrderService"
USER = "petstore.user.v1.UserService"
STAFF = callers.staff()
ALICE = callers.customer(1)
QUICK = Parameters(
    type=Type.ID, version=19, salt_len=16, hash_len=32, time_cost=1, memory_cost=8, parallelism=1
)
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED


@dataclass
class Stack:
    pet: RunningService
    order: RunningService
    user: RunningService
    channels: dict[str, grpc.aio.Channel]
    """Unsigned channels: each test puts exactly the metadata it means to send."""

    def pets(self) -> Any:
        return pet_service_pb2_grpc.PetServiceStub(self.channels[PET])

    def orders(self) -> Any:
        return order_service_pb2_grpc.OrderServiceStub(self.channels[ORDER])

    def users(self) -> Any:
        return user_service_pb2_grpc.UserServiceStub(self.channels[USER])


def settings(mode: str, *issuers: str) -> ServiceSettings:
    env = {"GRPC_LISTEN_ADDR": "127.0.0.1:0", "CALLER_TOKENS": mode, **trusting_env(*issuers)}
    return ServiceSettings.from_env(default_port=0, default_database="unused", env=env)


@pytest.fixture
def passwords() -> Iterator[Passwords]:
    passwords = Passwords(QUICK)
    try:
        yield passwords
    finally:
        passwords.close()


@pytest.fixture(params=["required"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def stack(mode: str, passwords: Passwords) -> AsyncIterator[Stack]:
    async with AsyncExitStack() as cleanup:
        pet_store = MemoryPetStore()
        pet = await start_service(
            pet_service.build_definition(pet_store), settings(mode, GATEWAY, ORDER_SERVICE, WEBHOOK_SERVICE)
        )
        cleanup.push_async_callback(pet.stop, None)
        directory = await cleanup.enter_async_context(
            grpc_pet_directory(f"127.0.0.1:{pet.port}", timeout_seconds=2, signer=signer(ORDER_SERVICE))
        )
        order = await start_service(
            order_service.build_definition(MemoryOrderStore(), directory),
            settings(mode, GATEWAY, WEBHOOK_SERVICE),
        )
        cleanup.push_async_callback(order.stop, None)
        tokens = SessionTokens("caller-refusals-secret-" + "x" * 32, 60)
        user = await start_service(
            user_service.build_definition(MemoryUserStore(), passwords, tokens), settings(mode, GATEWAY)
        )
        cleanup.push_async_callback(user.stop, None)
        channels = {
            name: await cleanup.enter_async_context(create_channel(f"127.0.0.1:{running.port}"))
            for name, running in ((PET, pet), (ORDER, order), (USER, user))
        }
        yield Stack(pet, order, user, channels)


def bearer(token: str) -> tuple[tuple[str, str]]:
    return ((METADATA_KEY, BEARER + token),)


def as_gateway(service: str, caller: caller_pb2.Caller | None = None) -> tuple[tuple[str, str]]:
    claims = CallerClaims.of(caller) if caller is not None else CallerClaims()
    return bearer(signer(GATEWAY).token(service, claims))


async def refused(call: Any, request: Any, metadata: Any = ()) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(request, metadata=metadata, timeout=5)
    assert caught.value.code() == UNAUTHENTICATED, caught.value.details()
    return str(caught.value.details())


async def a_user(stack: Stack) -> None:
    user = user_pb2.User(username="alice", email="alice@example.com")
    await stack.users().CreateUser(
        user_service_pb2.CreateUserRequest(user=user, password="a long enough password"),
        metadata=as_gateway(USER),
        timeout=5,
    )


def refusals(method: str, reason: str) -> float:
    labels = {"grpc_method": method, "reason": reason}
    return REGISTRY.get_sample_value("grpc_server_caller_refused_total", labels) or 0.0


async def test_staff_get_user_without_a_token_is_refused(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """The attack from the report: any pod that reaches the port claimed to be staff."""
    await a_user(stack)
    request = user_service_pb2.GetUserRequest(username="alice", caller=STAFF)
    before = refusals("/petstore.user.v1.UserService/GetUser", "missing")

    with caplog.at_level(logging.WARNING, logger="petstore_common.caller_gate"):
        assert "needs a caller token" in await refused(stack.users().GetUser, request)

    assert refusals("/petstore.user.v1.UserService/GetUser", "missing") == before + 1
    assert any(r.levelno == logging.WARNING and r.getMessage() == "caller refused" for r in caplog.records)
    # The same call, vouched for by the gateway, is served: the refusal was the token's.
    reply = await stack.users().GetUser(request, metadata=as_gateway(USER, STAFF), timeout=5)
    assert reply.user.username == "alice"


async def test_every_service_refuses_calls_without_a_token(stack: Stack) -> None:
    await refused(stack.pets().DeletePet, pet_service_pb2.DeletePetRequest(id=1, caller=STAFF))
    await refused(stack.pets().GetPet, pet_service_pb2.GetPetRequest(id=1))
    await refused(stack.orders().GetOrder, order_service_pb2.GetOrderRequest(id=1, caller=STAFF))
    await refused(
        stack.users().DeleteUser, user_service_pb2.DeleteUserRequest(username="alice", caller=STAFF)
    )


async def test_the_pet_watch_stream_refuses_a_call_without_a_token(stack: Stack) -> None:
    stream = stack.pets().WatchPets(pet_service_pb2.WatchPetsRequest(), timeout=5)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stream.read()
    assert caught.value.code() == UNAUTHENTICATED
    signed = stack.pets().WatchPets(pet_service_pb2.WatchPetsRequest(), metadata=as_gateway(PET), timeout=5)
    assert isinstance(await signed.read(), pet_service_pb2.WatchPetsResponse)
    signed.cancel()


async def test_a_token_signed_by_an_untrusted_key_is_refused(stack: Stack) -> None:
    impostor = CallerSigner(GATEWAY, generate().seed)  # says "gateway", holds another key
    token = impostor.token(USER, CallerClaims.of(STAFF))
    request = user_service_pb2.GetUserRequest(username="alice", caller=STAFF)

    assert "not trusted" in await refused(stack.users().GetUser, request, bearer(token))


async def test_a_customer_token_cannot_carry_a_staff_caller(stack: Stack) -> None:
    await a_user(stack)
    request = user_service_pb2.GetUserRequest(username="alice", caller=STAFF)

    message = await refused(stack.users().GetUser, request, as_gateway(USER, ALICE))
    assert "not the one its caller token vouches for" in message
    pet = pet_pb2.Pet(name="Rex", photo_urls=["https://example.com/rex.png"])
    create = pet_service_pb2.CreatePetRequest(caller=STAFF, pet=pet)
    await refused(stack.pets().CreatePet, create, as_gateway(PET, ALICE))
    await refused(stack.pets().CreatePet, create, as_gateway(PET))  # a token for no caller at all


async def test_a_token_for_one_service_is_refused_by_another(stack: Stack) -> None:
    request = user_service_pb2.GetUserRequest(username="alice", caller=STAFF)

    assert "another service" in await refused(stack.users().GetUser, request, as_gateway(PET, STAFF))


async def test_the_order_service_may_only_ask_the_pet_service_what_orders_need(stack: Stack) -> None:
    own = signer(ORDER_SERVICE)
    delete = pet_service_pb2.DeletePetRequest(id=1)
    assert "may not call this method" in await refused(stack.pets().DeletePet, delete, bearer(own.token(PET)))
    # Not on behalf of anybody, not even for a method it may call.
    get = pet_service_pb2.GetPetRequest(id=1)
    token = own.token(PET, CallerClaims.of(STAFF))
    assert "on behalf of a caller" in await refused(stack.pets().GetPet, get, bearer(token))
    # The order and user services do not trust it at all.
    user_request = user_service_pb2.GetUserRequest(username="alice")
    await refused(stack.users().GetUser, user_request, bearer(own.token(USER)))
    await refused(stack.orders().GetOrder, order_service_pb2.GetOrderRequest(id=1), bearer(own.token(ORDER)))
    # What it may do, it can (the pet does not exist: NOT_FOUND, past the gate).
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stack.pets().GetPet(get, metadata=bearer(own.token(PET)), timeout=5)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_the_webhook_service_may_only_read_and_acknowledge_events(stack: Stack) -> None:
    """A compromised webhook-service pod: its key opens the two event outboxes and nothing else,
    for nobody, and the user service does not trust it at all."""
    own = signer(WEBHOOK_SERVICE)
    pet_request = pet_service_pb2.GetPetRequest(id=1)
    create = order_service_pb2.CreateOrderRequest()
    create.order.pet_id = 1
    create.order.quantity = 1
    forbidden: tuple[tuple[Any, Any, str], ...] = (
        (stack.pets().GetPet, pet_request, PET),
        (stack.pets().FindExistingPets, pet_service_pb2.FindExistingPetsRequest(ids=[1]), PET),
        (stack.pets().ReservePet, pet_service_pb2.ReservePetRequest(pet_id=1, order_id=1), PET),
        (stack.pets().DeletePet, pet_service_pb2.DeletePetRequest(id=1), PET),
        (stack.orders().CreateOrder, create, ORDER),
        (stack.orders().GetOrder, order_service_pb2.GetOrderRequest(id=1), ORDER),
        (stack.orders().ListOrders, order_service_pb2.ListOrdersRequest(), ORDER),
        (stack.orders().DeleteOrder, order_service_pb2.DeleteOrderRequest(id=1), ORDER),
    )
    for call, request, service in forbidden:
        assert "may not call this method" in await refused(call, request, bearer(own.token(service)))
    # Not on behalf of anybody, not even for the methods it may call.
    allowed: tuple[tuple[Any, Any, str], ...] = (
        (stack.orders().ReadOrderEvents, order_service_pb2.ReadOrderEventsRequest(), ORDER),
        (stack.orders().AckOrderEvents, order_service_pb2.AckOrderEventsRequest(), ORDER),
        (stack.pets().ReadPetEvents, pet_service_pb2.ReadPetEventsRequest(), PET),
        (stack.pets().AckPetEvents, pet_service_pb2.AckPetEventsRequest(), PET),
    )
    for call, request, service in allowed:
        for caller in (STAFF, ALICE):
            token = own.token(service, CallerClaims.of(caller))
            assert "on behalf of a caller" in await refused(call, request, bearer(token))
    # A token for the order service does not open the pet service's outbox.
    read_pets = pet_service_pb2.ReadPetEventsRequest()
    assert "another service" in await refused(stack.pets().ReadPetEvents, read_pets, bearer(own.token(ORDER)))
    # The user service does not trust its key.
    user_request = user_service_pb2.GetUserRequest(username="alice")
    assert "not trusted" in await refused(stack.users().GetUser, user_request, bearer(own.token(USER)))
    # What it may do, it can: each outbox answers it (nothing recorded yet).
    orders = await stack.orders().ReadOrderEvents(
        order_service_pb2.ReadOrderEventsRequest(), metadata=bearer(own.token(ORDER)), timeout=5
    )
    pets = await stack.pets().ReadPetEvents(read_pets, metadata=bearer(own.token(PET)), timeout=5)
    assert (list(orders.events), list(pets.events)) == ([], [])


async def test_the_order_service_may_not_read_or_acknowledge_pet_events(stack: Stack) -> None:
    """The order service may not read or acknowledge (and so erase) the pet service's events."""
    own = signer(ORDER_SERVICE)
    for call, request in (
        (stack.pets().ReadPetEvents, pet_service_pb2.ReadPetEventsRequest()),
        (stack.pets().AckPetEvents, pet_service_pb2.AckPetEventsRequest()),
    ):
        assert "may not call this method" in await refused(call, request, bearer(own.token(PET)))
        await refused(call, request)  # and nobody without a token


async def test_an_order_reaches_its_pet_through_the_order_services_own_signature(stack: Stack) -> None:
    pet = pet_pb2.Pet(name="Rex", photo_urls=["https://example.com/rex.png"])
    created = await stack.pets().CreatePet(
        pet_service_pb2.CreatePetRequest(caller=STAFF, pet=pet), metadata=as_gateway(PET, STAFF), timeout=5
    )
    request = order_service_pb2.CreateOrderRequest(caller=ALICE)
    request.order.pet_id = created.pet.id
    request.order.quantity = 1
    reply = await stack.orders().CreateOrder(request, metadata=as_gateway(ORDER, ALICE), timeout=5)
    assert reply.order.pet_id == created.pet.id


async def test_a_second_authorization_entry_or_another_scheme_is_refused(stack: Stack) -> None:
    request = user_service_pb2.GetUserRequest(username="alice")
    token = signer(GATEWAY).token(USER)
    await refused(stack.users().GetUser, request, ((METADATA_KEY, f"Basic {token}"),))
    await refused(stack.users().GetUser, request, (*bearer(token), *bearer(token)))


@pytest.mark.parametrize("mode", ["optional"], indirect=True)
async def test_optional_mode_serves_a_call_without_a_token_but_refuses_a_bad_one(stack: Stack) -> None:
    await a_user(stack)
    request = user_service_pb2.GetUserRequest(username="alice", caller=STAFF)

    assert (await stack.users().GetUser(request, timeout=5)).user.username == "alice"
    await refused(stack.users().GetUser, request, bearer(CallerSigner(GATEWAY, generate().seed).token(USER)))
    await refused(stack.users().GetUser, request, as_gateway(USER, ALICE))
    await refused(stack.users().GetUser, request, bearer("not-a-token"))


def test_every_service_refuses_to_start_trusting_no_key() -> None:
    with pytest.raises(Exception, match="TRUSTED_CALLER_KEYS must list"):
        ServiceSettings.from_env(default_port=0, default_database="x", env={}).check_caller_trust()
    # Optional mode is the upgrade's: it starts without keys (and then accepts no token at all).
    ServiceSettings.from_env(
        default_port=0, default_database="x", env={"CALLER_TOKENS": "optional"}
    ).check_caller_trust()


def test_the_key_pairs_differ_per_issuer() -> None:
    publics = {KEYS[issuer].public for issuer in (GATEWAY, ORDER_SERVICE, WEBHOOK_SERVICE)}
    assert len(publics) == 3
