"""A field added to Pet in one release, while the releases run side by side (docs/compatibility.md).

Newer service, older clients: the working tree's pet service runs in a process of its own on
protos whose Pet has one more field (tests/skew/newer_pet.py); the working tree's own client
code, which has no such field, writes to it as the 1.0.0 gateway (no mask) and as this gateway
(PET_WRITTEN_FIELDS). The stored new field must survive both.

Older service, newer client: the working tree's pet service (this process) receives what a
newer client sends, the field's bytes and its path in the mask. The write must succeed for
every field that service knows, and keep what it stored of the new field.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from packaging.version import Version
from pymongo.asynchronous.database import AsyncDatabase

from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.grpc_server import RunningService, start_service
from petstore_common.settings import ServiceSettings
from petstore_devstack.releases import DEPLOYABLES, current_version, previous_release
from petstore_gateway.representations.pet import PET_WRITTEN_FIELDS, pet_from_wire
from petstore_pet.service import build_definition
from petstore_pet.servicer import IGNORED_PATHS_METADATA_KEY
from petstore_pet.storage.base import CLASSIC_FIELDS, PetStore
from petstore_pet.storage.memory import MemoryPetStore
from petstore_pet.storage.mongo import MongoPetStore

from .newer_pet import (
    ADDED_FIELD,
    REPO_ROOT,
    NewerPet,
    as_read_by_a_newer_client,
    as_sent_by_a_newer_client,
    generate_newer_protos,
)

if TYPE_CHECKING:
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub

STAFF = callers.staff()
SOLD = pet_pb2.PET_STATUS_SOLD
SERVICE_SCRIPT = Path(__file__).with_name("newer_pet_service.py")
START_SECONDS = 60.0


def a_newer_pet(**fields: Any) -> Any:
    """A full pet as a newer client writes it, the added field set."""
    defaults: dict[str, Any] = {
        "name": "Rex",
        "category": {"id": 1, "name": "Dogs"},
        "photo_urls": ["https://example.com/rex.png"],
        "tags": [{"id": 2, "name": "good"}],
        "status": pet_pb2.PET_STATUS_AVAILABLE,
        ADDED_FIELD: "Rexy",
    }
    return NewerPet(**{**defaults, **fields})


async def create_as_a_newer_client(stub: PetServiceAsyncStub) -> pet_pb2.Pet:
    request = pet_service_pb2.CreatePetRequest(caller=STAFF, pet=as_sent_by_a_newer_client(a_newer_pet()))
    return (await stub.CreatePet(request, timeout=5)).pet


async def stored(stub: PetServiceAsyncStub, pet_id: int) -> Any:
    """The stored pet, as a newer client reads it."""
    return as_read_by_a_newer_client(
        (await stub.GetPet(pet_service_pb2.GetPetRequest(id=pet_id), timeout=5)).pet
    )


# Newer service, older clients.


@pytest.fixture(scope="module")
def newer_protos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_newer_protos(tmp_path_factory.mktemp("newer"))


@pytest.fixture
async def newer_service(newer_protos: Path) -> AsyncIterator[PetServiceAsyncStub]:
    """The working tree's pet service on the newer protos, in its own process."""
    python_path = [
        newer_protos,
        *(REPO_ROOT / path for path in ("pet-service/src", "common/src", "protos/python")),
    ]
    env = {**os.environ, **trusting_env(), "PYTHONPATH": os.pathsep.join(map(str, python_path))}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SERVICE_SCRIPT),
        ADDED_FIELD,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        port = int(await asyncio.wait_for(process.stdout.readline(), START_SECONDS))
        async with signed_channel(f"127.0.0.1:{port}") as channel:
            yield pet_service_pb2_grpc.PetServiceStub(channel)
    finally:
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


async def test_the_newer_service_knows_the_added_field(newer_service: PetServiceAsyncStub) -> None:
    """What makes the tests below mean something: a newer client's write of the field sticks."""
    created = await create_as_a_newer_client(newer_service)
    request = pet_service_pb2.UpdatePetRequest(
        caller=STAFF,
        pet=as_sent_by_a_newer_client(NewerPet(id=created.id, **{ADDED_FIELD: "Rexie"})),
        update_mask=FieldMask(paths=[ADDED_FIELD]),
    )

    await newer_service.UpdatePet(request, timeout=5)

    assert getattr(await stored(newer_service, created.id), ADDED_FIELD) == "Rexie"


async def test_a_put_of_the_classic_gateway_without_a_mask_keeps_the_added_field(
    newer_service: PetServiceAsyncStub,
) -> None:
    created = await create_as_a_newer_client(newer_service)
    classic = pet_pb2.Pet(id=created.id, name="Max", photo_urls=["https://example.com/max.png"], status=SOLD)

    await newer_service.UpdatePet(pet_service_pb2.UpdatePetRequest(caller=STAFF, pet=classic), timeout=5)

    after = await stored(newer_service, created.id)
    assert getattr(after, ADDED_FIELD) == "Rexy"
    assert (after.name, list(after.photo_urls), after.status) == (
        "Max",
        ["https://example.com/max.png"],
        SOLD,
    )
    assert not after.HasField("category")  # a replace: what the body lacks is cleared
    assert list(after.tags) == []


async def test_a_put_of_this_gateway_keeps_the_added_field(newer_service: PetServiceAsyncStub) -> None:
    created = await create_as_a_newer_client(newer_service)
    body = {"id": created.id, "name": "Max", "photoUrls": [], "tags": [{"name": "calm"}]}
    request = pet_service_pb2.UpdatePetRequest(  # as the gateway's PUT /pet builds it
        caller=STAFF,
        pet=pet_from_wire(body, require_id=True),
        update_mask=FieldMask(paths=PET_WRITTEN_FIELDS),
    )

    await newer_service.UpdatePet(request, timeout=5)

    after = await stored(newer_service, created.id)
    assert getattr(after, ADDED_FIELD) == "Rexy"
    assert (after.name, [tag.name for tag in after.tags]) == ("Max", ["calm"])
    assert not after.HasField("category")


# This gateway beside the previous pet-service release.

IGNORES_UNKNOWN_PATHS_SINCE = Version("1.1.0")
"""The first pet-service release that ignores a mask path it does not know; 1.0.0 refuses it
(INVALID_ARGUMENT), so a gateway beside it must name only the fields 1.0.0 knows."""


def test_this_gateway_names_only_paths_the_previous_pet_service_release_writes() -> None:
    previous = previous_release(DEPLOYABLES["pet-service"])
    if Version(previous.version) < IGNORES_UNKNOWN_PATHS_SINCE:
        assert set(PET_WRITTEN_FIELDS) <= set(CLASSIC_FIELDS), (
            f"pet-service {previous.version} may run beside this gateway and refuses the other paths"
        )
    assert Version(current_version(DEPLOYABLES["pet-service"])) >= IGNORES_UNKNOWN_PATHS_SINCE


# Older service (the working tree's), newer client.


@pytest.fixture(params=["memory", pytest.param("mongo", marks=pytest.mark.mongo)])
def older_store(request: pytest.FixtureRequest) -> PetStore:
    if request.param == "memory":
        return MemoryPetStore()
    database: AsyncDatabase[dict[str, Any]] = request.getfixturevalue("mongo_db")
    return MongoPetStore(database)


@pytest.fixture
async def older_service(older_store: PetStore) -> AsyncIterator[PetServiceAsyncStub]:
    await older_store.ensure_indexes()
    settings = ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    service: RunningService = await start_service(build_definition(older_store), settings)
    try:
        async with signed_channel(f"127.0.0.1:{service.port}") as channel:
            yield pet_service_pb2_grpc.PetServiceStub(channel)
    finally:
        await service.stop(None)


async def stored_by_a_newer_replica(store: PetStore, stub: PetServiceAsyncStub) -> int:
    """A pet with the added field, as a newer replica of the service stored it in the shared
    database (a key of the document; in the memory store, the field's bytes on the message)."""
    created = await create_as_a_newer_client(stub)
    if isinstance(store, MongoPetStore):
        pets = store._pets  # the document as the newer release writes it
        await pets.update_one({"_id": created.id}, {"$set": {ADDED_FIELD: "Rexy"}})
    return created.id


async def test_a_newer_gateways_put_naming_the_added_field_succeeds_on_an_older_service(
    older_store: PetStore, older_service: PetServiceAsyncStub
) -> None:
    pet_id = await stored_by_a_newer_replica(older_store, older_service)
    newer_put = as_sent_by_a_newer_client(
        a_newer_pet(id=pet_id, name="Max", status=SOLD, **{ADDED_FIELD: "Maxie"})
    )
    call = older_service.UpdatePet(
        pet_service_pb2.UpdatePetRequest(
            caller=STAFF, pet=newer_put, update_mask=FieldMask(paths=[*PET_WRITTEN_FIELDS, ADDED_FIELD])
        ),
        timeout=5,
    )

    response = await call

    assert (response.pet.name, response.pet.status, response.pet.version) == ("Max", SOLD, 2)
    assert (IGNORED_PATHS_METADATA_KEY, ADDED_FIELD) in tuple(await call.trailing_metadata())
    get = await older_service.GetPet(pet_service_pb2.GetPetRequest(id=pet_id), timeout=5)
    assert (get.pet.name, get.pet.status) == ("Max", SOLD)
    # The older service cannot write the field, and never erases what a newer replica stored.
    if isinstance(older_store, MongoPetStore):
        document = await older_store._pets.find_one({"_id": pet_id})
        assert document is not None
        assert document[ADDED_FIELD] == "Rexy"
    else:
        assert getattr(as_read_by_a_newer_client(get.pet), ADDED_FIELD) == "Rexy"


async def test_a_newer_clients_put_of_the_added_field_alone_changes_nothing_it_knows(
    older_service: PetServiceAsyncStub,
) -> None:
    created = await create_as_a_newer_client(older_service)
    request = pet_service_pb2.UpdatePetRequest(
        caller=STAFF,
        pet=as_sent_by_a_newer_client(NewerPet(id=created.id, **{ADDED_FIELD: "Maxie"})),
        update_mask=FieldMask(paths=[ADDED_FIELD]),
    )

    response = await older_service.UpdatePet(request, timeout=5)

    assert (response.pet.name, list(response.pet.photo_urls)) == (created.name, list(created.photo_urls))
    assert response.pet.category == created.category


async def test_a_customer_naming_the_added_field_is_refused_by_an_older_service(
    older_service: PetServiceAsyncStub,
) -> None:
    created = await create_as_a_newer_client(older_service)
    request = pet_service_pb2.UpdatePetRequest(
        caller=callers.customer(7),
        pet=as_sent_by_a_newer_client(NewerPet(id=created.id, name="Stolen", **{ADDED_FIELD: "x"})),
        update_mask=FieldMask(paths=["name", ADDED_FIELD]),
    )

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await older_service.UpdatePet(request, timeout=5)

    assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    after = await older_service.GetPet(pet_service_pb2.GetPetRequest(id=created.id), timeout=5)
    assert after.pet.name == "Rex"
