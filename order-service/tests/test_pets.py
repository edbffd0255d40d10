"""The pet directory over real gRPC: only NOT_FOUND means "no such pet"; every other failure
is Unavailable, never a missing pet."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
import pytest

from petstore.pet.v1 import pet_service_pb2
from petstore_common.errors import Unavailable
from petstore_common.grpc_server import NO_PORT_SHARING
from petstore_order.pets import grpc_pet_directory

from .pet_backend import closed_address, pet_backend

GetPet = Callable[[pet_service_pb2.GetPetRequest, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]


@asynccontextmanager
async def pet_service_answering(get_pet: GetPet) -> AsyncIterator[str]:
    """A server whose PetService.GetPet behaves as `get_pet` does; yields its address."""
    server = grpc.aio.server(options=NO_PORT_SHARING)
    handler = grpc.unary_unary_rpc_method_handler(
        get_pet,
        request_deserializer=pet_service_pb2.GetPetRequest.FromString,
        response_serializer=pet_service_pb2.GetPetResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("petstore.pet.v1.PetService", {"GetPet": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


async def test_a_stored_pet_exists_and_an_unknown_one_does_not() -> None:
    async with pet_backend() as pets:
        pet_id = await pets.add_pet()
        async with grpc_pet_directory(pets.address, timeout_seconds=2) as directory:
            assert await directory.exists(pet_id) is True
            assert await directory.exists(pet_id + 1) is False


async def test_a_pet_service_nobody_listens_for_is_unavailable_at_once() -> None:
    async with grpc_pet_directory(closed_address(), timeout_seconds=2) as directory:
        started = time.monotonic()
        with pytest.raises(Unavailable, match=r"^the pet service is unavailable$"):
            await directory.exists(1)
        assert time.monotonic() - started < 1.5  # refused, not waited out


async def test_a_pet_service_slower_than_the_deadline_is_unavailable() -> None:
    async def hang(
        request: pet_service_pb2.GetPetRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        await asyncio.sleep(10)

    async with (
        pet_service_answering(hang) as address,
        grpc_pet_directory(address, timeout_seconds=0.2) as directory,
    ):
        started = time.monotonic()
        with pytest.raises(Unavailable, match=r"^the pet service is unavailable$"):
            await directory.exists(1)
        assert time.monotonic() - started < 1.5


async def test_the_callers_remaining_deadline_bounds_the_wait() -> None:
    async def hang(
        request: pet_service_pb2.GetPetRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        await asyncio.sleep(10)

    async with (
        pet_service_answering(hang) as address,
        grpc_pet_directory(address, timeout_seconds=8) as directory,
    ):
        started = time.monotonic()
        with pytest.raises(Unavailable):
            await directory.exists(1, budget_seconds=0.2)
        assert time.monotonic() - started < 1.5  # the budget, not the 8 s of our own deadline


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNKNOWN,
    ],
)
async def test_any_failure_but_not_found_is_unavailable(code: grpc.StatusCode) -> None:
    async def fail(
        request: pet_service_pb2.GetPetRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Any:
        await context.abort(code, "pet 1 not found")  # the message must not matter

    async with (
        pet_service_answering(fail) as address,
        grpc_pet_directory(address, timeout_seconds=2) as directory,
    ):
        with pytest.raises(Unavailable, match=r"^the pet service is unavailable$"):
            await directory.exists(1)


async def test_a_restarted_pet_service_is_asked_again() -> None:
    async with pet_backend() as first:
        address = first.address
        pet_id = await first.add_pet()
        async with grpc_pet_directory(address, timeout_seconds=2) as directory:
            assert await directory.exists(pet_id)
            await first.running.stop(None)
            with pytest.raises(Unavailable):
                await directory.exists(pet_id)

            async with pet_backend(address) as second:
                await second.add_pet(pet_id)
                deadline = time.monotonic() + 5
                while True:
                    try:
                        assert await directory.exists(pet_id)
                        break
                    except Unavailable:
                        assert time.monotonic() < deadline, "the directory did not reconnect"
                        await asyncio.sleep(0.05)
