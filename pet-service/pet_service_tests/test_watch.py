"""UpdatePet's version precondition and the WatchPets stream, over a real in-process server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import grpc
import pytest

from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore.versioning.v1 import precondition_pb2
from petstore_common import callers
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.grpc_server import RunningService, start_service
from petstore_common.settings import ServiceSettings
from petstore_pet.changes import ChangesUnsupported, Position, Subscription
from petstore_pet.service import build_definition
from petstore_pet.storage.memory import MemoryPetStore

if TYPE_CHECKING:
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub

STAFF = callers.staff()
SETTINGS = ServiceSettings.from_env(
    default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
)


@pytest.fixture
def store() -> MemoryPetStore:
    return MemoryPetStore()


@pytest.fixture
async def running(store: MemoryPetStore) -> AsyncIterator[RunningService]:
    service = await start_service(build_definition(store, heartbeat_seconds=0.05), SETTINGS)
    try:
        yield service
    finally:
        await service.stop(None)


@pytest.fixture
async def stub(running: RunningService) -> AsyncIterator[PetServiceAsyncStub]:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        yield pet_service_pb2_grpc.PetServiceStub(channel)


async def create(stub: PetServiceAsyncStub, name: str = "Rex") -> pet_pb2.Pet:
    request = pet_service_pb2.CreatePetRequest(caller=STAFF, pet=pet_pb2.Pet(name=name))
    return (await stub.CreatePet(request, timeout=5)).pet


async def read(
    stream: grpc.aio.UnaryStreamCall[pet_service_pb2.WatchPetsRequest, pet_service_pb2.WatchPetsResponse],
) -> pet_service_pb2.WatchPetsResponse:
    message = await stream.read()
    assert isinstance(message, pet_service_pb2.WatchPetsResponse)
    return message


def rename(pet_id: int, name: str, *versions: int) -> pet_service_pb2.UpdatePetRequest:
    request = pet_service_pb2.UpdatePetRequest(caller=STAFF, pet=pet_pb2.Pet(id=pet_id, name=name))
    request.update_mask.paths.append("name")
    if versions:
        request.precondition.CopyFrom(precondition_pb2.Precondition(versions=versions))
    return request


async def test_an_update_on_the_held_version_writes_and_moves_the_version(stub: PetServiceAsyncStub) -> None:
    pet = await create(stub)

    reply = await stub.UpdatePet(rename(pet.id, "Max", pet.version), timeout=5)

    assert (reply.pet.name, reply.pet.version) == ("Max", 2)


async def test_an_update_on_a_version_that_moved_on_is_failed_precondition(stub: PetServiceAsyncStub) -> None:
    pet = await create(stub)
    await stub.UpdatePet(rename(pet.id, "Max"), timeout=5)

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.UpdatePet(rename(pet.id, "Bob", pet.version), timeout=5)

    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert caught.value.details() == f"pet {pet.id} was changed since the version given (If-Match)"
    got = await stub.GetPet(pet_service_pb2.GetPetRequest(id=pet.id), timeout=5)
    assert (got.pet.name, got.pet.version) == ("Max", 2)


async def test_an_empty_precondition_matches_nothing(stub: PetServiceAsyncStub) -> None:
    pet = await create(stub)
    request = rename(pet.id, "Bob")
    request.precondition.SetInParent()

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.UpdatePet(request, timeout=5)

    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_watch_says_it_is_live_then_streams_every_change_in_commit_order(
    stub: PetServiceAsyncStub,
) -> None:
    before = await create(stub, "before")
    stream = stub.WatchPets(pet_service_pb2.WatchPetsRequest())
    assert list((await read(stream)).changes) == []  # live

    pet = await create(stub)
    await stub.UpdatePet(rename(pet.id, "Max"), timeout=5)
    await stub.DeletePet(pet_service_pb2.DeletePetRequest(caller=STAFF, id=pet.id), timeout=5)

    seen: list[tuple[int, int, bool]] = []
    async with asyncio.timeout(5):
        while len(seen) < 3:
            message = await read(stream)
            seen += [(c.id, c.version, c.deleted) for c in message.changes]
    assert seen == [(pet.id, 1, False), (pet.id, 2, False), (pet.id, 2, True)]
    assert before.id not in {pet_id for pet_id, _, _ in seen}
    stream.cancel()


async def test_a_quiet_watch_sends_heartbeats(stub: PetServiceAsyncStub) -> None:
    stream = stub.WatchPets(pet_service_pb2.WatchPetsRequest())
    async with asyncio.timeout(5):
        messages = [await read(stream) for _ in range(3)]
    assert all(not message.changes for message in messages)
    stream.cancel()


async def test_every_watch_message_announces_the_heartbeat_the_service_keeps(
    stub: PetServiceAsyncStub,
) -> None:
    stream = stub.WatchPets(pet_service_pb2.WatchPetsRequest())
    async with asyncio.timeout(5):
        first = await read(stream)
        heartbeat = await read(stream)  # nothing changed: the 0.05 s heartbeat
        await create(stub)
        change = await read(stream)
        while not change.changes:  # heartbeats sent while the pet was being created
            change = await read(stream)
    assert list(heartbeat.changes) == []
    assert [m.heartbeat_ms for m in (first, heartbeat, change)] == [50, 50, 50]
    stream.cancel()


async def test_stopping_ends_watch_streams_at_once_instead_of_waiting_out_the_grace(
    store: MemoryPetStore,
) -> None:
    service = await start_service(build_definition(store), SETTINGS)
    async with signed_channel(f"127.0.0.1:{service.port}") as channel:
        stream = pet_service_pb2_grpc.PetServiceStub(channel).WatchPets(pet_service_pb2.WatchPetsRequest())
        await stream.read()
        started = time.monotonic()
        await service.stop(10)
        assert time.monotonic() - started < 5
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stream.read()
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


class NoChangeStreams:
    def subscribe(self, resume: Position | None = None) -> AbstractAsyncContextManager[Subscription]:
        raise ChangesUnsupported("the database cannot stream its changes (no change streams): read through")

    async def close(self) -> None:
        pass


async def test_a_database_without_change_streams_makes_watch_failed_precondition(
    store: MemoryPetStore,
) -> None:
    store.changes = NoChangeStreams()  # type: ignore[assignment]
    service = await start_service(build_definition(store), SETTINGS)
    try:
        async with signed_channel(f"127.0.0.1:{service.port}") as channel:
            stream = pet_service_pb2_grpc.PetServiceStub(channel).WatchPets(
                pet_service_pb2.WatchPetsRequest()
            )
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stream.read()
    finally:
        await service.stop(None)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "no change streams" in (caught.value.details() or "")


async def test_a_broken_stream_resumes_where_it_stopped_with_every_change_since(
    stub: PetServiceAsyncStub,
) -> None:
    first = stub.WatchPets(pet_service_pb2.WatchPetsRequest())
    live = await read(first)
    pet = await create(stub, "seen")
    seen = await read(first)
    assert [c.id for c in seen.changes] == [pet.id]
    assert (seen.epoch, seen.sequence) == (live.epoch, live.sequence + 1)
    first.cancel()  # the connection aged out, say
    missed = await create(stub, "missed")
    await stub.UpdatePet(rename(pet.id, "renamed"), timeout=5)

    again = stub.WatchPets(
        pet_service_pb2.WatchPetsRequest(resume_epoch=seen.epoch, resume_after=seen.sequence)
    )
    resumed = await read(again)

    assert resumed.resumed
    assert [(c.id, c.version) for c in resumed.changes] == [(missed.id, 1), (pet.id, 2)]
    assert resumed.sequence == seen.sequence + 2
    again.cancel()


@pytest.mark.parametrize("resume", [("another-epoch", 0), ("same", 99), ("same", -1)])
async def test_a_position_this_feed_cannot_resume_from_starts_afresh(
    stub: PetServiceAsyncStub, resume: tuple[str, int]
) -> None:
    probe = stub.WatchPets(pet_service_pb2.WatchPetsRequest())
    epoch = (await read(probe)).epoch
    probe.cancel()
    await create(stub)
    name, after = resume
    stream = stub.WatchPets(
        pet_service_pb2.WatchPetsRequest(resume_epoch=epoch if name == "same" else name, resume_after=after)
    )
    message = await read(stream)
    assert not message.resumed
    assert list(message.changes) == []  # from now on only: the watcher must forget what it cached
    stream.cancel()
