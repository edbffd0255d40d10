"""ReadPetEvents and AckPetEvents over a real in-process gRPC server (memory store): the webhook
service reads and acknowledges; every other caller is refused and changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import TYPE_CHECKING

import grpc
import pytest
from prometheus_client import REGISTRY

from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import GATEWAY, ORDER_SERVICE, WEBHOOK_SERVICE
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.grpc_client import create_channel
from petstore_common.grpc_server import RunningService, start_service
from petstore_common.paging import MAX_PAGE_SIZE
from petstore_common.rules import field_rules
from petstore_common.settings import ServiceSettings
from petstore_pet.events import MAX_EVENTS_PER_PET, MAX_EVENTS_RESPONSE_BYTES, RELEASED, RESERVED, Page
from petstore_pet.service import build_definition
from petstore_pet.servicer import PetServicer
from petstore_pet.storage.memory import MemoryPetStore
from petstore_pet.validation import MAX_PHOTO_URL_CHARS, MAX_PHOTO_URLS

if TYPE_CHECKING:
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub

MAX_ACKS = field_rules(pet_service_pb2.AckPetEventsRequest, "acks").repeated.max_items


@pytest.fixture
def store() -> MemoryPetStore:
    return MemoryPetStore()


@pytest.fixture
async def running(store: MemoryPetStore) -> AsyncIterator[RunningService]:
    settings = ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    service = await start_service(build_definition(store), settings)
    try:
        yield service
    finally:
        await service.stop(None)


@pytest.fixture
async def webhook(running: RunningService) -> AsyncIterator[PetServiceAsyncStub]:
    async with signed_channel(f"127.0.0.1:{running.port}", WEBHOOK_SERVICE) as channel:
        yield pet_service_pb2_grpc.PetServiceStub(channel)


async def read(stub: PetServiceAsyncStub, page_size: int = 0) -> list[pet_service_pb2.PetEvent]:
    response = await stub.ReadPetEvents(pet_service_pb2.ReadPetEventsRequest(page_size=page_size), timeout=5)
    return list(response.events)


def ack(*through: tuple[int, int]) -> pet_service_pb2.AckPetEventsRequest:
    return pet_service_pb2.AckPetEventsRequest(
        acks=[
            pet_service_pb2.PetEventAck(pet_id=pet_id, through_sequence=sequence)
            for pet_id, sequence in through
        ]
    )


async def reserved_and_released(store: MemoryPetStore, pet: pet_pb2.Pet, times: int = 1) -> int:
    created = await store.create(pet)
    for _ in range(times):
        await store.reserve(created.id, 7)
        await store.release(created.id, 7)
    return created.id


async def test_the_webhook_service_reads_the_events_and_acknowledges_them(
    store: MemoryPetStore, webhook: PetServiceAsyncStub
) -> None:
    pet_id = await reserved_and_released(store, pet_pb2.Pet(name="Rex"))

    events = await read(webhook)
    assert [(event.pet.id, event.sequence, event.type, event.order_id) for event in events] == [
        (pet_id, 1, RESERVED, 7),
        (pet_id, 2, RELEASED, 7),
    ]
    assert events[1].pet == await store.get(pet_id)

    await webhook.AckPetEvents(ack((pet_id, 2), (pet_id, 1)), timeout=5)  # the further one counts
    assert await read(webhook) == []
    await webhook.AckPetEvents(ack((pet_id, 2), (pet_id + 1, 1)), timeout=5)  # again; an unknown pet


async def test_a_page_holds_page_size_pets_capped_by_the_list_rule(
    store: MemoryPetStore, webhook: PetServiceAsyncStub
) -> None:
    ids = [await reserved_and_released(store, pet_pb2.Pet(name=f"pet-{n}")) for n in range(3)]

    assert [event.pet.id for event in await read(webhook, page_size=2)] == [ids[0]] * 2 + [ids[1]] * 2
    assert len(await read(webhook, page_size=MAX_PAGE_SIZE * 10)) == 6


async def test_a_pet_of_the_largest_size_with_every_event_kept_is_read_in_pieces(
    store: MemoryPetStore, webhook: PetServiceAsyncStub
) -> None:
    """64 events of a ~135 KB pet are ~8.6 MB, past gRPC's 4 MiB: each answer stays under its
    byte bound, and acknowledging what came brings the rest."""
    largest = pet_pb2.Pet(name="Big", photo_urls=["u" * MAX_PHOTO_URL_CHARS] * MAX_PHOTO_URLS)
    pet_id = await reserved_and_released(store, largest, times=MAX_EVENTS_PER_PET // 2)

    sequences: list[int] = []
    while events := await read(webhook):
        assert sum(event.ByteSize() for event in events) <= MAX_EVENTS_RESPONSE_BYTES
        sequences += [event.sequence for event in events]
        await webhook.AckPetEvents(ack((pet_id, events[-1].sequence)), timeout=5)

    assert sequences == list(range(1, MAX_EVENTS_PER_PET + 1))


@pytest.mark.parametrize(
    "request_",
    [
        pet_service_pb2.ReadPetEventsRequest(page_size=-1),
        ack((0, 1)),
        ack((1, 0)),
        ack(*[(n, 1) for n in range(1, MAX_ACKS + 2)]),
    ],
    ids=["negative-page", "no-pet", "no-sequence", "too-many-acks"],
)
async def test_bad_requests_are_invalid_arguments(
    store: MemoryPetStore,
    webhook: PetServiceAsyncStub,
    request_: pet_service_pb2.ReadPetEventsRequest | pet_service_pb2.AckPetEventsRequest,
) -> None:
    pet_id = await reserved_and_released(store, pet_pb2.Pet(name="Rex"))
    call = (
        webhook.ReadPetEvents
        if isinstance(request_, pet_service_pb2.ReadPetEventsRequest)
        else webhook.AckPetEvents
    )

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call(request_, timeout=5)  # type: ignore[arg-type]

    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(await read(webhook)) == 2, pet_id


@pytest.mark.parametrize("issuer", [ORDER_SERVICE, None], ids=["order-service", "unsigned"])
async def test_no_other_service_reads_or_acknowledges_events(
    store: MemoryPetStore, running: RunningService, webhook: PetServiceAsyncStub, issuer: str | None
) -> None:
    pet_id = await reserved_and_released(store, pet_pb2.Pet(name="Rex"))
    target = f"127.0.0.1:{running.port}"
    channel = signed_channel(target, issuer) if issuer else create_channel(target)

    async with channel:
        stub = pet_service_pb2_grpc.PetServiceStub(channel)
        for call, request in [
            (stub.ReadPetEvents, pet_service_pb2.ReadPetEventsRequest()),
            (stub.AckPetEvents, ack((pet_id, 2))),
        ]:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call(request, timeout=5)  # type: ignore[operator]
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED

    assert len(await read(webhook)) == 2  # nothing acknowledged


async def test_the_webhook_service_may_call_nothing_else(
    store: MemoryPetStore, webhook: PetServiceAsyncStub
) -> None:
    pet_id = await reserved_and_released(store, pet_pb2.Pet(name="Rex"))

    for call, request in [
        (webhook.GetPet, pet_service_pb2.GetPetRequest(id=pet_id)),
        (webhook.ReservePet, pet_service_pb2.ReservePetRequest(pet_id=pet_id, order_id=9)),
        (webhook.DeletePet, pet_service_pb2.DeletePetRequest(id=pet_id, caller=callers.staff())),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call(request, timeout=5)  # type: ignore[operator]
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert (await store.get(pet_id)).status == pet_pb2.PET_STATUS_AVAILABLE


async def test_the_pet_a_client_reads_carries_no_event(
    store: MemoryPetStore, running: RunningService
) -> None:
    pet_id = await reserved_and_released(store, pet_pb2.Pet(name="Rex"))

    async with signed_channel(f"127.0.0.1:{running.port}", GATEWAY) as channel:
        stub = pet_service_pb2_grpc.PetServiceStub(channel)
        response = await stub.GetPet(pet_service_pb2.GetPetRequest(id=pet_id), timeout=5)

    expected = pet_pb2.Pet(id=pet_id, name="Rex", status=pet_pb2.PET_STATUS_AVAILABLE, version=3)
    assert response.SerializeToString() == pet_service_pb2.GetPetResponse(pet=expected).SerializeToString()


async def test_a_deletion_purges_expired_deleted_pets_events_at_most_once_an_interval(
    store: MemoryPetStore,
) -> None:
    servicer = PetServicer(store, deleted_events_retention=timedelta(0))  # everything expired at once
    first, second = [await reserved_and_released(store, pet_pb2.Pet(name=name)) for name in ("A", "B")]
    before = REGISTRY.get_sample_value("petstore_pet_deleted_events_purged_total") or 0.0

    for pet_id in (first, second):
        request = pet_service_pb2.DeletePetRequest(id=pet_id, caller=callers.staff())
        await servicer.DeletePet(request, None)  # type: ignore[arg-type]  # no context used

    page = Page(10)
    await store.read_events(page)
    assert {event.pet.id for event in page.events} == {second}  # the second deletion came too soon
    assert (REGISTRY.get_sample_value("petstore_pet_deleted_events_purged_total") or 0.0) - before == 1
