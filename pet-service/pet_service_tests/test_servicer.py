"""PetService over a real in-process gRPC server (memory store), called through the stub."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.errors import Unavailable
from petstore_common.grpc_client import is_serving
from petstore_common.grpc_server import RunningService, start_service
from petstore_common.rules import field_rules
from petstore_common.settings import ServiceSettings
from petstore_pet import validation
from petstore_pet.service import SERVICE_NAME, build_definition
from petstore_pet.servicer import IGNORED_PATHS_METADATA_KEY
from petstore_pet.storage.base import CLASSIC_FIELDS
from petstore_pet.storage.memory import MemoryPetStore

from .image_files import image_file

if TYPE_CHECKING:
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub

AVAILABLE = pet_pb2.PET_STATUS_AVAILABLE
SOLD = pet_pb2.PET_STATUS_SOLD
STAFF = callers.staff()
PNG = image_file("PNG")
MAX_IDS_PER_CHECK = field_rules(pet_service_pb2.FindExistingPetsRequest, "ids").repeated.max_items


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
async def channel(running: RunningService) -> AsyncIterator[grpc.aio.Channel]:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        yield channel


@pytest.fixture
def stub(channel: grpc.aio.Channel) -> PetServiceAsyncStub:
    return pet_service_pb2_grpc.PetServiceStub(channel)


async def create(stub: PetServiceAsyncStub, pet: pet_pb2.Pet) -> pet_pb2.Pet:
    response = await stub.CreatePet(pet_service_pb2.CreatePetRequest(caller=STAFF, pet=pet), timeout=5)
    return response.pet


def a_full_pet(**fields: object) -> pet_pb2.Pet:
    pet = pet_pb2.Pet(
        name="Rex",
        category=pet_pb2.Category(id=1, name="Dogs"),
        photo_urls=["https://example.com/rex.png"],
        tags=[pet_pb2.Tag(id=2, name="good")],
        status=AVAILABLE,
    )
    for name, value in fields.items():
        setattr(pet, name, value)
    return pet


@contextmanager
def fails(code: grpc.StatusCode, message: str) -> Iterator[None]:
    """Expect the call inside to fail with this status code and exact message."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        yield
    assert (caught.value.code(), caught.value.details()) == (code, message)


async def test_health_reports_the_service_serving(channel: grpc.aio.Channel) -> None:
    for _ in range(50):
        if await is_serving(channel, SERVICE_NAME):
            break
        await asyncio.sleep(0.05)
    assert await is_serving(channel, SERVICE_NAME)


async def test_created_pets_are_returned_by_get(stub: PetServiceAsyncStub) -> None:
    created = await create(stub, a_full_pet())

    response = await stub.GetPet(pet_service_pb2.GetPetRequest(id=created.id), timeout=5)

    assert created.id > 0
    assert response.pet == created == a_full_pet(id=created.id, version=1)


async def test_a_taken_id_is_already_exists(stub: PetServiceAsyncStub) -> None:
    await create(stub, a_full_pet(id=7))

    with fails(grpc.StatusCode.ALREADY_EXISTS, "pet 7 already exists"):
        await create(stub, a_full_pet(id=7))


@pytest.mark.parametrize(
    ("pet", "message"),
    [
        (pet_pb2.Pet(), "name is required"),
        (pet_pb2.Pet(name=" \t "), "name: must not contain control characters"),  # told first
        (pet_pb2.Pet(name="\ufeff\u2003"), "name: must not be blank"),
        (pet_pb2.Pet(name="Rex", id=-1), "id: must be positive"),
        (pet_pb2.Pet(name="Rex", photo_urls=["u"] * 65), "photoUrls: must have at most 64 entries"),
    ],
)
async def test_an_invalid_pet_is_invalid_argument(
    stub: PetServiceAsyncStub, pet: pet_pb2.Pet, message: str
) -> None:
    with fails(grpc.StatusCode.INVALID_ARGUMENT, message):
        await create(stub, pet)


async def test_get_and_delete_of_unknown_ids(stub: PetServiceAsyncStub) -> None:
    with fails(grpc.StatusCode.NOT_FOUND, "pet 42 not found"):
        await stub.GetPet(pet_service_pb2.GetPetRequest(id=42), timeout=5)
    with fails(grpc.StatusCode.NOT_FOUND, "pet 42 not found"):
        await stub.DeletePet(pet_service_pb2.DeletePetRequest(caller=STAFF, id=42), timeout=5)
    with fails(grpc.StatusCode.INVALID_ARGUMENT, "id: must be positive"):
        await stub.GetPet(pet_service_pb2.GetPetRequest(id=0), timeout=5)


async def test_find_existing_pets_names_the_stored_ones_once(stub: PetServiceAsyncStub) -> None:
    kept = await create(stub, a_full_pet())
    deleted = await create(stub, a_full_pet())
    await stub.DeletePet(pet_service_pb2.DeletePetRequest(caller=STAFF, id=deleted.id), timeout=5)

    asked = [deleted.id, kept.id, kept.id, kept.id + 1000]
    found = await stub.FindExistingPets(pet_service_pb2.FindExistingPetsRequest(ids=asked), timeout=5)

    assert list(found.ids) == [kept.id]


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([], "ids: must not be empty"),
        ([1, 0], "ids[1]: must be positive"),
        ([-5], "ids[0]: must be positive"),
        (list(range(1, MAX_IDS_PER_CHECK + 2)), f"ids: must have at most {MAX_IDS_PER_CHECK} entries"),
    ],
)
async def test_find_existing_pets_refuses_a_question_out_of_bounds(
    stub: PetServiceAsyncStub, ids: list[int], message: str
) -> None:
    with fails(grpc.StatusCode.INVALID_ARGUMENT, message):
        await stub.FindExistingPets(pet_service_pb2.FindExistingPetsRequest(ids=ids), timeout=5)


async def test_find_existing_pets_takes_as_many_ids_as_the_bound(stub: PetServiceAsyncStub) -> None:
    created = await create(stub, a_full_pet())
    asked = [created.id, *range(10**9, 10**9 + MAX_IDS_PER_CHECK - 1)]
    found = await stub.FindExistingPets(pet_service_pb2.FindExistingPetsRequest(ids=asked), timeout=5)
    assert list(found.ids) == [created.id]


async def test_delete_removes_the_pet(stub: PetServiceAsyncStub) -> None:
    created = await create(stub, a_full_pet())

    await stub.DeletePet(pet_service_pb2.DeletePetRequest(caller=STAFF, id=created.id), timeout=5)

    with fails(grpc.StatusCode.NOT_FOUND, f"pet {created.id} not found"):
        await stub.GetPet(pet_service_pb2.GetPetRequest(id=created.id), timeout=5)


async def test_an_update_without_mask_replaces_every_field(stub: PetServiceAsyncStub) -> None:
    created = await create(stub, a_full_pet())
    replacement = pet_pb2.Pet(id=created.id, name="Max", status=SOLD)

    response = await stub.UpdatePet(
        pet_service_pb2.UpdatePetRequest(caller=STAFF, pet=replacement), timeout=5
    )

    stored = pet_pb2.Pet(id=created.id, name="Max", status=SOLD, version=2)
    assert response.pet == stored
    assert (await stub.GetPet(pet_service_pb2.GetPetRequest(id=created.id), timeout=5)).pet == stored


async def test_an_update_with_a_mask_writes_only_the_named_fields(stub: PetServiceAsyncStub) -> None:
    created = await create(stub, a_full_pet())
    request = pet_service_pb2.UpdatePetRequest(
        caller=STAFF,
        pet=pet_pb2.Pet(id=created.id, name="ignored", status=SOLD),
        update_mask=FieldMask(paths=["status"]),
    )

    response = await stub.UpdatePet(request, timeout=5)

    assert response.pet == a_full_pet(id=created.id, status=SOLD, version=2)


@pytest.mark.parametrize(
    ("request_", "code", "message"),
    [
        (
            pet_service_pb2.UpdatePetRequest(caller=STAFF, pet=pet_pb2.Pet(id=99, name="Max")),
            grpc.StatusCode.NOT_FOUND,
            "pet 99 not found",
        ),
        (
            pet_service_pb2.UpdatePetRequest(
                caller=STAFF, pet=pet_pb2.Pet(id=1, name="Max"), update_mask=FieldMask(paths=["version"])
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "update_mask path 'version' names a read-only field (id, version)",
        ),
        (
            pet_service_pb2.UpdatePetRequest(
                caller=STAFF, pet=pet_pb2.Pet(id=1, name="Max"), update_mask=FieldMask(paths=["Nick-name"])
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "update_mask path 'Nick-name' is not a field path (lower-case field names joined by dots, "
            "at most 128 characters)",
        ),
        (
            pet_service_pb2.UpdatePetRequest(
                caller=STAFF, pet=pet_pb2.Pet(id=1), update_mask=FieldMask(paths=["name"])
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "name is required",
        ),
        (
            pet_service_pb2.UpdatePetRequest(caller=STAFF, pet=pet_pb2.Pet(name="Max")),
            grpc.StatusCode.INVALID_ARGUMENT,
            "id is required",
        ),
        (
            pet_service_pb2.UpdatePetRequest(
                caller=STAFF, pet=pet_pb2.Pet(id=1, name="   "), update_mask=FieldMask(paths=["name"])
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "name: must not be blank",
        ),
    ],
)
async def test_failing_updates(
    stub: PetServiceAsyncStub, request_: pet_service_pb2.UpdatePetRequest, code: grpc.StatusCode, message: str
) -> None:
    await create(stub, a_full_pet(id=1))

    with fails(code, message):
        await stub.UpdatePet(request_, timeout=5)


async def test_a_path_this_release_does_not_know_is_ignored_and_named_in_the_trailers(
    stub: PetServiceAsyncStub,
) -> None:
    """A newer client names a field added after this release: the write goes through for the
    fields this release knows, the rest of the pet is kept, and the caller is told what was not."""
    created = await create(stub, a_full_pet())
    call = stub.UpdatePet(
        pet_service_pb2.UpdatePetRequest(
            caller=STAFF,
            pet=pet_pb2.Pet(id=created.id, name="Max"),
            update_mask=FieldMask(paths=["name", "nickname"]),
        ),
        timeout=5,
    )

    response = await call

    assert response.pet == a_full_pet(id=created.id, name="Max", version=2)
    assert (IGNORED_PATHS_METADATA_KEY, "nickname") in tuple(await call.trailing_metadata())


async def test_a_mask_of_many_unknown_paths_gets_a_bounded_report(stub: PetServiceAsyncStub) -> None:
    created = await create(stub, a_full_pet())
    paths = [f"field_{index}_{'x' * 100}" for index in range(validation.MAX_MASK_PATHS)]
    call = stub.UpdatePet(
        pet_service_pb2.UpdatePetRequest(
            caller=STAFF, pet=pet_pb2.Pet(id=created.id), update_mask=FieldMask(paths=paths)
        ),
        timeout=5,
    )

    response = await call

    assert response.pet == a_full_pet(id=created.id, version=2)  # nothing it knows was named
    reported = dict(tuple(await call.trailing_metadata()))[IGNORED_PATHS_METADATA_KEY]
    assert reported == ",".join(paths[: validation.MAX_REPORTED_PATHS])


async def test_an_empty_mask_writes_the_classic_fields(
    stub: PetServiceAsyncStub, store: MemoryPetStore
) -> None:
    created = await create(stub, a_full_pet())
    written: list[tuple[str, ...]] = []
    update = store.update

    async def recording_update(pet: pet_pb2.Pet, fields: Collection[str], **kwargs: Any) -> pet_pb2.Pet:
        written.append(tuple(fields))
        return await update(pet, fields, **kwargs)

    store.update = recording_update  # type: ignore[method-assign]
    await stub.UpdatePet(
        pet_service_pb2.UpdatePetRequest(caller=STAFF, pet=a_full_pet(id=created.id)), timeout=5
    )

    assert written == [CLASSIC_FIELDS]


@pytest.mark.parametrize("caller", [callers.customer(7), callers.anonymous()], ids=["customer", "anonymous"])
async def test_only_staff_update_whatever_the_mask_names(
    stub: PetServiceAsyncStub, caller: callers.Caller
) -> None:
    created = await create(stub, a_full_pet())

    with fails(grpc.StatusCode.PERMISSION_DENIED, "only staff may change the catalogue"):
        await stub.UpdatePet(
            pet_service_pb2.UpdatePetRequest(
                caller=caller,
                pet=pet_pb2.Pet(id=created.id, name="Stolen"),
                update_mask=FieldMask(paths=["nickname", "name"]),
            ),
            timeout=5,
        )
    assert (await stub.GetPet(pet_service_pb2.GetPetRequest(id=created.id), timeout=5)).pet == created


async def list_ids(stub: PetServiceAsyncStub, request: pet_service_pb2.ListPetsRequest) -> list[list[int]]:
    """The ids of every page, following next_page_token to the end."""
    pages: list[list[int]] = []
    while True:
        response = await stub.ListPets(request, timeout=5)
        pages.append([pet.id for pet in response.pets])
        if not response.next_page_token:
            return pages
        request.page_token = response.next_page_token


async def test_list_pages_through_every_match_once(stub: PetServiceAsyncStub) -> None:
    for pet_id in range(1, 8):
        tags = [pet_pb2.Tag(name="cute"), pet_pb2.Tag(name="small")] if pet_id % 2 else []
        await create(
            stub, pet_pb2.Pet(id=pet_id, name="p", status=SOLD if pet_id == 4 else AVAILABLE, tags=tags)
        )

    pages = await list_ids(
        stub, pet_service_pb2.ListPetsRequest(statuses=[SOLD], tag_names=["cute", "small"], page_size=2)
    )

    assert pages == [[1, 3], [4, 5], [7]]


async def test_an_exactly_full_last_page_has_no_token(stub: PetServiceAsyncStub) -> None:
    for _ in range(4):
        await create(stub, pet_pb2.Pet(name="p", status=SOLD))

    pages = await list_ids(stub, pet_service_pb2.ListPetsRequest(statuses=[SOLD], page_size=2))

    assert pages == [[1, 2], [3, 4]]


async def test_list_caps_the_page_size(stub: PetServiceAsyncStub, store: MemoryPetStore) -> None:
    for _ in range(1001):
        await store.create(pet_pb2.Pet(name="p", status=SOLD))

    first = await stub.ListPets(pet_service_pb2.ListPetsRequest(statuses=[SOLD], page_size=5000), timeout=5)
    default = await stub.ListPets(pet_service_pb2.ListPetsRequest(statuses=[SOLD]), timeout=5)

    assert [pet.id for pet in first.pets] == list(range(1, 1001))
    assert first.next_page_token
    assert len(default.pets) == 100


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (pet_service_pb2.ListPetsRequest(), "at least one status or tag name is required"),
        (pet_service_pb2.ListPetsRequest(statuses=[SOLD], page_token="garbage"), "pageToken is invalid"),
        (pet_service_pb2.ListPetsRequest(statuses=[SOLD], page_size=-1), "limit must not be negative"),
        (pet_service_pb2.ListPetsRequest(statuses=[7]), "status[0]: must be one of available, pending, sold"),  # type: ignore[list-item]
    ],
)
async def test_invalid_lists(
    stub: PetServiceAsyncStub, request_: pet_service_pb2.ListPetsRequest, message: str
) -> None:
    with fails(grpc.StatusCode.INVALID_ARGUMENT, message):
        await stub.ListPets(request_, timeout=5)


async def test_a_token_cannot_be_reused_with_another_filter(stub: PetServiceAsyncStub) -> None:
    for _ in range(3):
        await create(stub, pet_pb2.Pet(name="p", status=SOLD))
    first = await stub.ListPets(pet_service_pb2.ListPetsRequest(statuses=[SOLD], page_size=1), timeout=5)

    with fails(grpc.StatusCode.INVALID_ARGUMENT, "pageToken does not belong to this filter"):
        await stub.ListPets(
            pet_service_pb2.ListPetsRequest(statuses=[AVAILABLE], page_token=first.next_page_token), timeout=5
        )


async def test_inventory_counts_every_status(stub: PetServiceAsyncStub) -> None:
    empty = await stub.GetInventory(pet_service_pb2.GetInventoryRequest(), timeout=5)
    for status in [SOLD, SOLD, AVAILABLE, pet_pb2.PET_STATUS_UNSPECIFIED]:
        await create(stub, pet_pb2.Pet(name="p", status=status))

    counted = await stub.GetInventory(pet_service_pb2.GetInventoryRequest(), timeout=5)

    assert dict(empty.counts) == {"available": 0, "pending": 0, "sold": 0}
    assert dict(counted.counts) == {"available": 1, "pending": 0, "sold": 2}


async def test_an_uploaded_image_is_stored(stub: PetServiceAsyncStub, store: MemoryPetStore) -> None:
    pet = await create(stub, a_full_pet())
    request = pet_service_pb2.UploadPetImageRequest(
        caller=STAFF,
        pet_id=pet.id,
        content_type="image/png",
        data=PNG,
        additional_metadata="front",
        file_name="../../etc/passwd",
    )

    response = await stub.UploadPetImage(request, timeout=5)

    assert response.size_bytes == len(PNG)
    assert len(response.image_id) == 32
    int(response.image_id, 16)  # uuid4 hex
    [image] = await store.list_images(pet.id)
    assert (image.image_id, image.data, image.content_type) == (response.image_id, PNG, "image/png")
    assert (image.additional_metadata, image.file_name) == ("front", "../../etc/passwd")


@pytest.mark.parametrize(
    ("changes", "code", "message"),
    [
        ({"pet_id": 99}, grpc.StatusCode.NOT_FOUND, "pet 99 not found"),
        ({"pet_id": 0}, grpc.StatusCode.INVALID_ARGUMENT, "petId: must be positive"),
        ({"data": b""}, grpc.StatusCode.INVALID_ARGUMENT, "image data is required"),
        (
            {"data": b"\x89PNG\r\n\x1a\n" + b"\x00" * 100},
            grpc.StatusCode.INVALID_ARGUMENT,
            "file is not a complete PNG, JPEG, GIF or WebP image",
        ),
        (
            {"data": PNG + bytes(1024 * 1024)},
            grpc.StatusCode.INVALID_ARGUMENT,
            "image must be at most 1048576 bytes",
        ),
        (
            {"additional_metadata": "m" * 1025},
            grpc.StatusCode.INVALID_ARGUMENT,
            "additionalMetadata: must be at most 1024 characters",
        ),
        (
            {"additional_metadata": "front\x1bview"},
            grpc.StatusCode.INVALID_ARGUMENT,
            "additionalMetadata: must not contain control characters",
        ),
        (
            {"images_base_url": "https://shop.example/" + "p" * 2048},
            grpc.StatusCode.INVALID_ARGUMENT,
            "the image's URL: must be at most 2048 characters",
        ),
    ],
)
async def test_failing_uploads(
    stub: PetServiceAsyncStub,
    store: MemoryPetStore,
    changes: dict[str, object],
    code: grpc.StatusCode,
    message: str,
) -> None:
    pet = await create(stub, a_full_pet())
    request = pet_service_pb2.UploadPetImageRequest(
        caller=STAFF, pet_id=pet.id, content_type="image/png", data=PNG
    )
    for name, value in changes.items():
        setattr(request, name, value)

    with fails(code, message):
        await stub.UploadPetImage(request, timeout=5)
    assert await store.list_images(pet.id) == []


NOT_STAFF = [
    pytest.param(callers.customer(7), id="customer"),
    pytest.param(callers.anonymous(), id="anonymous"),
    pytest.param(callers.Caller(), id="unspecified"),
]


@pytest.mark.parametrize("caller", NOT_STAFF)
async def test_only_staff_change_the_catalogue(
    stub: PetServiceAsyncStub, store: MemoryPetStore, caller: callers.Caller
) -> None:
    pet = await create(stub, a_full_pet())
    denied = "only staff may change the catalogue"

    with fails(grpc.StatusCode.PERMISSION_DENIED, denied):
        await stub.CreatePet(pet_service_pb2.CreatePetRequest(pet=a_full_pet(), caller=caller), timeout=5)
    with fails(grpc.StatusCode.PERMISSION_DENIED, denied):
        await stub.UpdatePet(
            pet_service_pb2.UpdatePetRequest(pet=a_full_pet(id=pet.id, name="Stolen"), caller=caller),
            timeout=5,
        )
    with fails(grpc.StatusCode.PERMISSION_DENIED, denied):
        await stub.DeletePet(pet_service_pb2.DeletePetRequest(id=pet.id, caller=caller), timeout=5)
    with fails(grpc.StatusCode.PERMISSION_DENIED, denied):
        await stub.UploadPetImage(
            pet_service_pb2.UploadPetImageRequest(
                pet_id=pet.id, content_type="image/png", data=PNG, caller=caller
            ),
            timeout=5,
        )

    assert (await stub.GetPet(pet_service_pb2.GetPetRequest(id=pet.id), timeout=5)).pet == pet
    listed = await stub.ListPets(pet_service_pb2.ListPetsRequest(statuses=[AVAILABLE]), timeout=5)
    assert list(listed.pets) == [pet]
    assert await store.list_images(pet.id) == []


@pytest.mark.parametrize("caller", NOT_STAFF)
async def test_a_refused_caller_learns_nothing_about_absent_pets(
    stub: PetServiceAsyncStub, caller: callers.Caller
) -> None:
    with fails(grpc.StatusCode.PERMISSION_DENIED, "only staff may change the catalogue"):
        await stub.DeletePet(pet_service_pb2.DeletePetRequest(id=424242, caller=caller), timeout=5)


def keyed(
    pet: pet_pb2.Pet, key: str = "key-1", caller: callers.Caller = STAFF
) -> pet_service_pb2.CreatePetRequest:
    return pet_service_pb2.CreatePetRequest(pet=pet, caller=caller, idempotency_key=key)


async def test_a_retried_create_replays_the_first_pet_once(
    stub: PetServiceAsyncStub, store: MemoryPetStore
) -> None:
    first = await stub.CreatePet(keyed(a_full_pet()), timeout=5)
    again = await stub.CreatePet(keyed(a_full_pet()), timeout=5)

    assert (first.idempotent_replay, again.idempotent_replay) == (False, True)
    assert again.pet == first.pet
    listed = await stub.ListPets(pet_service_pb2.ListPetsRequest(statuses=[AVAILABLE]), timeout=5)
    assert [pet.id for pet in listed.pets] == [first.pet.id]


async def test_a_key_reused_for_another_pet_is_failed_precondition(stub: PetServiceAsyncStub) -> None:
    await stub.CreatePet(keyed(a_full_pet()), timeout=5)

    with fails(
        grpc.StatusCode.FAILED_PRECONDITION, "this Idempotency-Key was already used with a different request"
    ):
        await stub.CreatePet(keyed(a_full_pet(name="Max")), timeout=5)


async def test_twelve_racing_twins_create_one_pet(stub: PetServiceAsyncStub) -> None:
    replies = await asyncio.gather(
        *(stub.CreatePet(keyed(a_full_pet()), timeout=5) for _ in range(12)), return_exceptions=True
    )

    created = {reply.pet.id for reply in replies if isinstance(reply, pet_service_pb2.CreatePetResponse)}
    assert len(created) == 1
    refused = [r for r in replies if isinstance(r, grpc.aio.AioRpcError)]
    assert all(r.code() == grpc.StatusCode.ABORTED for r in refused)
    listed = await stub.ListPets(pet_service_pb2.ListPetsRequest(statuses=[AVAILABLE]), timeout=5)
    assert len(listed.pets) == 1


async def test_keys_of_two_staff_keys_never_meet(stub: PetServiceAsyncStub) -> None:
    other = callers.Caller(kind=STAFF.kind, staff_key_id="other")

    mine = await stub.CreatePet(keyed(a_full_pet()), timeout=5)
    theirs = await stub.CreatePet(keyed(a_full_pet(name="Max"), caller=other), timeout=5)

    assert mine.pet.id != theirs.pet.id
    assert not theirs.idempotent_replay


async def test_a_retry_after_an_unknown_outcome_finds_the_pet_instead_of_making_another(
    stub: PetServiceAsyncStub, store: MemoryPetStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_create = store.create

    async def writes_then_loses_the_answer(pet: pet_pb2.Pet) -> pet_pb2.Pet:
        await real_create(pet)
        raise Unavailable("the database is unavailable")

    monkeypatch.setattr(store, "create", writes_then_loses_the_answer)
    with fails(grpc.StatusCode.UNAVAILABLE, "the database is unavailable"):
        await stub.CreatePet(keyed(a_full_pet()), timeout=5)
    monkeypatch.setattr(store, "create", real_create)

    retried = await stub.CreatePet(keyed(a_full_pet()), timeout=5)

    listed = await stub.ListPets(pet_service_pb2.ListPetsRequest(statuses=[AVAILABLE]), timeout=5)
    assert [pet.id for pet in listed.pets] == [retried.pet.id]


async def test_a_refused_create_frees_its_key(stub: PetServiceAsyncStub) -> None:
    await create(stub, a_full_pet(id=5))

    with fails(grpc.StatusCode.ALREADY_EXISTS, "pet 5 already exists"):
        await stub.CreatePet(keyed(a_full_pet(id=5)), timeout=5)
    corrected = await stub.CreatePet(keyed(a_full_pet(id=6)), timeout=5)

    assert (corrected.pet.id, corrected.idempotent_replay) == (6, False)


async def test_a_bad_key_is_invalid(stub: PetServiceAsyncStub) -> None:
    with fails(
        grpc.StatusCode.INVALID_ARGUMENT, "Idempotency-Key must be 1 to 255 characters of visible ASCII"
    ):
        await stub.CreatePet(keyed(a_full_pet(), key="has space"), timeout=5)
