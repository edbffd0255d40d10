"""Which calls a channel retries is read from the protos' idempotency_level marks, and a marked
read that meets UNAVAILABLE once is answered while an unmarked write is not retried."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor_pb2 import MethodOptions

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore.user.v1 import user_service_pb2
from petstore.webhook.v1 import webhook_service_pb2
from petstore_common.grpc_client import create_channel, idempotency_level, methods_marked, service_config

PET = pet_service_pb2.DESCRIPTOR.services_by_name["PetService"]
SERVICES = (
    PET,
    order_service_pb2.DESCRIPTOR.services_by_name["OrderService"],
    user_service_pb2.DESCRIPTOR.services_by_name["UserService"],
    webhook_service_pb2.DESCRIPTOR.services_by_name["WebhookService"],
)
PET_SERVICE = PET.full_name
UNKNOWN = MethodOptions.IDEMPOTENCY_UNKNOWN


def retried_by_the_channel(services: tuple[Any, ...] = SERVICES) -> set[tuple[str, str]]:
    """(service, method) of every method a channel for `services` retries, read from the
    service config it is given."""
    config = service_config(services)
    names = [name for method_config in config["methodConfig"] for name in method_config["name"]]
    return {(name["service"], name["method"]) for name in names}


def marked_in_the_protos() -> dict[tuple[str, str], int]:
    return {
        (service.full_name, method.name): method.GetOptions().idempotency_level
        for service in SERVICES
        for method in service.methods
    }


def test_every_retried_method_is_marked_in_its_proto_and_every_marked_one_is_retried() -> None:
    marked = {key for key, level in marked_in_the_protos().items() if level != UNKNOWN}

    assert retried_by_the_channel() == marked


def test_the_order_services_pet_look_up_is_retried() -> None:
    assert (PET_SERVICE, "FindExistingPets") in retried_by_the_channel((PET,))
    assert idempotency_level(f"/{PET_SERVICE}/FindExistingPets") == MethodOptions.NO_SIDE_EFFECTS


def test_a_channel_retries_only_the_methods_of_the_services_it_is_for() -> None:
    assert {service for service, _ in retried_by_the_channel((PET,))} == {PET_SERVICE}
    assert retried_by_the_channel(()) == set()


def test_a_server_reads_a_methods_mark_from_its_path() -> None:
    assert idempotency_level(f"/{PET_SERVICE}/GetPet") == MethodOptions.NO_SIDE_EFFECTS
    assert idempotency_level(f"/{PET_SERVICE}/ReservePet") == MethodOptions.IDEMPOTENT
    assert idempotency_level(f"/{PET_SERVICE}/CreatePet") == UNKNOWN
    assert idempotency_level("/grpc.health.v1.Health/Check") == UNKNOWN
    assert idempotency_level("/no.such.Service/Method") == UNKNOWN


@pytest.mark.parametrize(
    ("service", "method"),
    [
        (PET_SERVICE, "CreatePet"),
        (PET_SERVICE, "UpdatePet"),
        (PET_SERVICE, "DeletePet"),
        (PET_SERVICE, "UploadPetImage"),
        ("petstore.order.v1.OrderService", "CreateOrder"),
        ("petstore.user.v1.UserService", "Login"),
        ("petstore.user.v1.UserService", "UpdateUser"),
        ("petstore.webhook.v1.WebhookService", "CreateEndpoint"),
        ("petstore.webhook.v1.WebhookService", "DeleteEndpoint"),
    ],
)
def test_writes_are_not_retried(service: str, method: str) -> None:
    assert (service, method) not in retried_by_the_channel()
    assert marked_in_the_protos()[service, method] == UNKNOWN


def test_reads_and_idempotent_writes_are_apart() -> None:
    reads = {
        (service, method)
        for service, methods in methods_marked(MethodOptions.NO_SIDE_EFFECTS, SERVICES).items()
        for method in methods
    }
    writes = {
        (service, method)
        for service, methods in methods_marked(MethodOptions.IDEMPOTENT, SERVICES).items()
        for method in methods
    }

    assert reads
    assert not reads & writes
    assert writes == {
        (PET_SERVICE, "ReservePet"),
        (PET_SERVICE, "ReleasePet"),
        (PET_SERVICE, "SellPet"),
        (PET_SERVICE, "AckPetEvents"),
        ("petstore.order.v1.OrderService", "AckOrderEvents"),
    }


class FailsOnce:
    """A server whose every method fails UNAVAILABLE on its first call, then answers."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def handler(self, method: str) -> grpc.RpcMethodHandler[Any, Any]:
        async def behaviour(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            self.calls[method] = self.calls.get(method, 0) + 1
            if self.calls[method] == 1:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "a replica going away")
            return b""

        return grpc.unary_unary_rpc_method_handler(behaviour)


@pytest.fixture
async def fails_once() -> AsyncIterator[tuple[FailsOnce, str]]:
    fake = FailsOnce()
    server = grpc.aio.server()
    methods = {name: fake.handler(name) for name in ("FindExistingPets", "UpdatePet")}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(PET_SERVICE, methods),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield fake, f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


async def test_a_marked_read_that_meets_unavailable_is_answered(fails_once: tuple[FailsOnce, str]) -> None:
    fake, target = fails_once
    async with create_channel(target, (PET,)) as channel:
        look_up: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            f"/{PET_SERVICE}/FindExistingPets"
        )

        assert await look_up(b"", timeout=5) == b""

    assert fake.calls["FindExistingPets"] == 2


async def test_an_unmarked_write_that_meets_unavailable_fails(fails_once: tuple[FailsOnce, str]) -> None:
    fake, target = fails_once
    async with create_channel(target, (PET,)) as channel:
        update: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            f"/{PET_SERVICE}/UpdatePet"
        )

        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await update(b"", timeout=5)

    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert fake.calls["UpdatePet"] == 1
