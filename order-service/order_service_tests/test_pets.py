"""The pet directory over real gRPC: only "not found" means "no such pet"; every other failure
is Unavailable, never a missing pet. Questions asked together share FindExistingPets calls,
never one sent before they were asked; a pet service without that RPC is asked with GetPet."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from petstore.pet.v1 import pet_service_pb2
from petstore_common.caller_gate import ORDER_SERVICE
from petstore_common.caller_testing import signer
from petstore_common.errors import Unavailable
from petstore_common.grpc_server import NO_PORT_SHARING
from petstore_order.pets import MAX_IDS_PER_CHECK, grpc_pet_directory

from .pet_backend import closed_address, pet_backend

Handler = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]

BATCHED = "FindExistingPets"
EARLIER_RELEASE = "GetPet"
"""The RPC a pet service answers: this release's, or (a pet service one release behind) GetPet only."""
_MESSAGES: dict[str, tuple[type[Message], type[Message]]] = {
    BATCHED: (pet_service_pb2.FindExistingPetsRequest, pet_service_pb2.FindExistingPetsResponse),
    EARLIER_RELEASE: (pet_service_pb2.GetPetRequest, pet_service_pb2.GetPetResponse),
}


@asynccontextmanager
async def pet_service_answering(handlers: dict[str, Handler]) -> AsyncIterator[str]:
    """A server whose PetService answers only the RPCs in `handlers` (others: UNIMPLEMENTED)."""
    server = grpc.aio.server(options=NO_PORT_SHARING)
    methods = {
        name: grpc.unary_unary_rpc_method_handler(
            handler,
            request_deserializer=_MESSAGES[name][0].FromString,
            response_serializer=_MESSAGES[name][1].SerializeToString,
        )
        for name, handler in handlers.items()
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("petstore.pet.v1.PetService", methods),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


async def hang(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    await asyncio.sleep(10)


async def test_a_stored_pet_exists_and_an_unknown_one_does_not() -> None:
    async with pet_backend() as pets:
        pet_id = await pets.add_pet()
        async with grpc_pet_directory(
            pets.address, timeout_seconds=2, signer=signer(ORDER_SERVICE)
        ) as directory:
            assert await directory.exists(pet_id) is True
            assert await directory.exists(pet_id + 1) is False


async def test_questions_asked_together_share_calls() -> None:
    async with pet_backend() as pets:
        stored = [await pets.add_pet() for _ in range(5)]
        asked = [*stored, *range(1000, 1045)] * 2  # 100 questions, duplicates among them
        async with grpc_pet_directory(
            pets.address, timeout_seconds=2, signer=signer(ORDER_SERVICE)
        ) as directory:
            answers = await asyncio.gather(*(directory.exists(pet_id) for pet_id in asked))
            assert answers == [pet_id in stored for pet_id in asked]
            assert directory.calls <= 3  # the first question's call, then everyone else's


async def test_a_call_carries_at_most_the_bound_of_ids() -> None:
    sizes: list[int] = []

    async def find(
        request: pet_service_pb2.FindExistingPetsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pet_service_pb2.FindExistingPetsResponse:
        sizes.append(len(request.ids))
        return pet_service_pb2.FindExistingPetsResponse(ids=[pet_id for pet_id in request.ids if pet_id % 2])

    asked = range(1, 2 * MAX_IDS_PER_CHECK + 2)
    async with (
        pet_service_answering({BATCHED: find}) as address,
        grpc_pet_directory(address, timeout_seconds=5, signer=signer(ORDER_SERVICE)) as directory,
    ):
        answers = await asyncio.gather(*(directory.exists(pet_id) for pet_id in asked))
    assert answers == [bool(pet_id % 2) for pet_id in asked]
    assert max(sizes) == MAX_IDS_PER_CHECK
    assert sum(sizes) == len(asked)


async def test_a_question_never_takes_the_answer_of_a_call_sent_before_it() -> None:
    # The first call reads the store, then is held; meanwhile the pet's deletion is acknowledged
    # and the same pet is asked about again. That question must wait for a call of its own.
    stored = {7}
    first_read = asyncio.Event()
    release = asyncio.Event()
    calls = 0

    async def find(
        request: pet_service_pb2.FindExistingPetsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pet_service_pb2.FindExistingPetsResponse:
        nonlocal calls
        calls += 1
        existing = [pet_id for pet_id in request.ids if pet_id in stored]
        if calls == 1:
            first_read.set()
            await release.wait()
        return pet_service_pb2.FindExistingPetsResponse(ids=existing)

    async with (
        pet_service_answering({BATCHED: find}) as address,
        grpc_pet_directory(address, timeout_seconds=5, signer=signer(ORDER_SERVICE)) as directory,
    ):
        before = asyncio.create_task(directory.exists(7))
        await first_read.wait()
        stored.discard(7)  # the deletion, acknowledged
        after = asyncio.create_task(directory.exists(7))
        await asyncio.sleep(0.05)
        release.set()
        assert await before is True  # asked before the deletion: either answer is right
        assert await after is False
    assert calls == 2


async def test_a_pet_service_of_an_earlier_release_is_asked_with_get_pet() -> None:
    calls: list[str] = []

    async def get_pet(
        request: pet_service_pb2.GetPetRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pet_service_pb2.GetPetResponse:
        calls.append(EARLIER_RELEASE)
        if request.id != 3:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"pet {request.id} not found")
        return pet_service_pb2.GetPetResponse()

    async with (
        pet_service_answering({EARLIER_RELEASE: get_pet}) as address,
        grpc_pet_directory(address, timeout_seconds=2, signer=signer(ORDER_SERVICE)) as directory,
    ):
        first = asyncio.create_task(directory.exists(3))
        await asyncio.sleep(0)  # its call is out: the next questions wait for another
        waiting = [asyncio.create_task(directory.exists(pet_id)) for pet_id in (3, 4, 5)]
        assert [await first, *[await task for task in waiting]] == [True, True, False, False]
        assert await directory.exists(3) is True  # straight to GetPet: the batch was refused
        assert directory.calls == 1  # the questions that waited were not offered it again
    assert calls == [EARLIER_RELEASE] * 5


async def test_a_pet_service_nobody_listens_for_is_unavailable_at_once() -> None:
    async with grpc_pet_directory(
        closed_address(), timeout_seconds=2, signer=signer(ORDER_SERVICE)
    ) as directory:
        started = time.monotonic()
        with pytest.raises(Unavailable, match=r"^the pet service is unavailable$"):
            await directory.exists(1)
        assert time.monotonic() - started < 1.5  # refused, not waited out


@pytest.mark.parametrize("rpc", [BATCHED, EARLIER_RELEASE])
async def test_a_pet_service_slower_than_the_deadline_is_unavailable(rpc: str) -> None:
    async with (
        pet_service_answering({rpc: hang}) as address,
        grpc_pet_directory(address, timeout_seconds=0.2, signer=signer(ORDER_SERVICE)) as directory,
    ):
        started = time.monotonic()
        with pytest.raises(Unavailable, match=r"^the pet service is unavailable$"):
            await directory.exists(1)
        assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("rpc", [BATCHED, EARLIER_RELEASE])
async def test_the_callers_remaining_deadline_bounds_the_wait(rpc: str) -> None:
    async with (
        pet_service_answering({rpc: hang}) as address,
        grpc_pet_directory(address, timeout_seconds=8, signer=signer(ORDER_SERVICE)) as directory,
    ):
        started = time.monotonic()
        with pytest.raises(Unavailable):
            await directory.exists(1, budget_seconds=0.2)
        assert time.monotonic() - started < 1.5  # the budget, not the 8 s of our own deadline


@pytest.mark.parametrize("rpc", [BATCHED, EARLIER_RELEASE])
@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNKNOWN,
    ],
)
async def test_any_failure_but_not_found_is_unavailable(rpc: str, code: grpc.StatusCode) -> None:
    async def fail(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(code, "pet 1 not found")  # the message must not matter

    async with (
        pet_service_answering({rpc: fail}) as address,
        grpc_pet_directory(address, timeout_seconds=2, signer=signer(ORDER_SERVICE)) as directory,
    ):
        with pytest.raises(Unavailable, match=r"^the pet service is unavailable$"):
            await directory.exists(1)


async def test_a_restarted_pet_service_is_asked_again() -> None:
    async with pet_backend() as first:
        address = first.address
        pet_id = await first.add_pet()
        async with grpc_pet_directory(address, timeout_seconds=2, signer=signer(ORDER_SERVICE)) as directory:
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
