"""Images over a real in-process gRPC server (memory store): the URL an upload adds to its pet,
the image served back, the bound per pet, and images going with their pet."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
import pytest

from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.contract_bounds import MAX_IMAGES_PER_PET
from petstore_common.grpc_server import start_service
from petstore_common.settings import ServiceSettings
from petstore_pet.service import build_definition
from petstore_pet.storage.memory import MemoryPetStore

from .image_files import image_file
from .test_servicer import fails

if TYPE_CHECKING:
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub

STAFF = callers.staff()
BASE = "https://shop.example/v2/pet/{}/images"


@pytest.fixture
def store() -> MemoryPetStore:
    return MemoryPetStore()


@pytest.fixture
async def stub(store: MemoryPetStore) -> AsyncIterator[PetServiceAsyncStub]:
    settings = ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    running = await start_service(build_definition(store), settings)
    try:
        async with signed_channel(f"127.0.0.1:{running.port}") as channel:
            yield pet_service_pb2_grpc.PetServiceStub(channel)
    finally:
        await running.stop(None)


@pytest.fixture
async def pet(store: MemoryPetStore) -> pet_pb2.Pet:
    return await store.create(pet_pb2.Pet(name="Rex", photo_urls=["https://elsewhere.example/rex.png"]))


async def upload(
    stub: PetServiceAsyncStub, pet_id: int, data: bytes, *, content_type: str = "image/png", base: str = BASE
) -> pet_service_pb2.UploadPetImageResponse:
    request = pet_service_pb2.UploadPetImageRequest(
        caller=STAFF, pet_id=pet_id, content_type=content_type, data=data, images_base_url=base.format(pet_id)
    )
    return await stub.UploadPetImage(request, timeout=5)


async def get_image(
    stub: PetServiceAsyncStub, pet_id: int, image_id: str
) -> pet_service_pb2.GetPetImageResponse:
    return await stub.GetPetImage(
        pet_service_pb2.GetPetImageRequest(pet_id=pet_id, image_id=image_id), timeout=5
    )


async def test_an_upload_adds_its_url_to_the_pet_and_moves_its_version_on(
    stub: PetServiceAsyncStub, store: MemoryPetStore, pet: pet_pb2.Pet
) -> None:
    reply = await upload(stub, pet.id, image_file("PNG"))

    url = f"{BASE.format(pet.id)}/{reply.image_id}"
    assert (reply.photo_url, reply.media_type) == (url, "image/png")
    assert list(reply.pet.photo_urls) == ["https://elsewhere.example/rex.png", url]
    assert reply.pet.version == pet.version + 1
    assert await store.get(pet.id) == reply.pet


async def test_the_image_is_served_back_with_the_decoded_media_type(
    stub: PetServiceAsyncStub, pet: pet_pb2.Pet
) -> None:
    jpeg = image_file("JPEG")
    reply = await upload(stub, pet.id, jpeg, content_type="image/png")  # the claim is not believed

    served = await get_image(stub, pet.id, reply.image_id)

    assert (served.media_type, served.data) == ("image/jpeg", jpeg)


async def test_without_a_base_url_the_pet_is_left_as_it_was(
    stub: PetServiceAsyncStub, store: MemoryPetStore, pet: pet_pb2.Pet
) -> None:
    reply = await upload(stub, pet.id, image_file(), base="")

    assert reply.photo_url == ""
    assert await store.get(pet.id) == pet
    assert (await get_image(stub, pet.id, reply.image_id)).media_type == "image/png"


async def test_a_pet_keeps_at_most_its_share_of_images(
    stub: PetServiceAsyncStub, store: MemoryPetStore, pet: pet_pb2.Pet
) -> None:
    for _ in range(MAX_IMAGES_PER_PET):
        await upload(stub, pet.id, image_file())
    before = await store.get(pet.id)

    with fails(
        grpc.StatusCode.FAILED_PRECONDITION,
        f"pet {pet.id} has {MAX_IMAGES_PER_PET} images already: at most {MAX_IMAGES_PER_PET} are kept",
    ):
        await upload(stub, pet.id, image_file())

    assert len(await store.list_images(pet.id)) == MAX_IMAGES_PER_PET
    assert await store.get(pet.id) == before  # no URL of a refused image


async def test_a_pet_without_room_in_photo_urls_takes_no_image(
    stub: PetServiceAsyncStub, store: MemoryPetStore
) -> None:
    full = await store.create(
        pet_pb2.Pet(name="Rex", photo_urls=[f"https://e.example/{i}" for i in range(64)])
    )

    with fails(
        grpc.StatusCode.FAILED_PRECONDITION,
        f"pet {full.id} has 64 photoUrls already: there is no room for another",
    ):
        await upload(stub, full.id, image_file())
    assert await store.list_images(full.id) == []


async def test_images_go_with_their_pet(stub: PetServiceAsyncStub, pet: pet_pb2.Pet) -> None:
    reply = await upload(stub, pet.id, image_file())

    await stub.DeletePet(pet_service_pb2.DeletePetRequest(id=pet.id, caller=STAFF), timeout=5)

    with fails(grpc.StatusCode.NOT_FOUND, f"pet {pet.id} has no image {reply.image_id}"):
        await get_image(stub, pet.id, reply.image_id)


async def test_an_image_is_found_only_under_its_own_pet(
    stub: PetServiceAsyncStub, store: MemoryPetStore, pet: pet_pb2.Pet
) -> None:
    other = await store.create(pet_pb2.Pet(name="Max"))
    reply = await upload(stub, pet.id, image_file())

    with fails(grpc.StatusCode.NOT_FOUND, f"pet {other.id} has no image {reply.image_id}"):
        await get_image(stub, other.id, reply.image_id)
    with fails(grpc.StatusCode.INVALID_ARGUMENT, "imageId: must be 32 lowercase hexadecimal digits"):
        await get_image(stub, pet.id, "../" + reply.image_id)
