"""One contract for every PetDirectory the order service's tests use: the sale tests' double
(pets_double.py) and the gRPC stand-in (pet_backend.py) answer as the real pet service does.

The real one is the pet service itself, run as its own process (`python -m petstore_pet` on its
embedded store) and asked over gRPC through the order service's own GrpcPetDirectory, signed as
the order service: nothing of the pet service's package is imported, only its contract and its
command. A double that drifts from the service fails here, not in production.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass

import pytest

from petstore.pet.v1 import pet_pb2, pet_service_pb2, pet_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import ORDER_SERVICE
from petstore_common.caller_testing import signed_channel, signer, trusting_env
from petstore_common.errors import FailedPrecondition, NotFound
from petstore_devstack.service_process import service_process
from petstore_order.pets import PET_SERVICE, PetDirectory, grpc_pet_directory

from .pet_backend import pet_backend
from .pets_double import Pet, PetsDouble

ORDER, OTHER_ORDER = 101, 202
UNKNOWN_PET = 987_654


@dataclass
class Directory:
    """A PetDirectory and how to put a new available pet behind it."""

    pets: PetDirectory
    add_pet: Callable[[], Awaitable[int]]


async def _double(_: AsyncExitStack) -> Directory:
    double = PetsDouble()

    async def add() -> int:
        pet_id = len(double.pets) + 1
        double.pets[pet_id] = Pet()
        return pet_id

    return Directory(double, add)


async def _real(cleanup: AsyncExitStack) -> Directory:
    env = {"MONGODB_URI": "", **trusting_env()}
    running = await cleanup.enter_async_context(service_process("petstore_pet", PET_SERVICE.full_name, env))
    staff_channel = await cleanup.enter_async_context(signed_channel(running.address))
    staff = pet_service_pb2_grpc.PetServiceStub(staff_channel)
    directory = await cleanup.enter_async_context(
        grpc_pet_directory(running.address, timeout_seconds=5, signer=signer(ORDER_SERVICE))
    )

    async def add() -> int:
        pet = pet_pb2.Pet(name="Rex", status=pet_pb2.PET_STATUS_AVAILABLE)
        created = await staff.CreatePet(
            pet_service_pb2.CreatePetRequest(caller=callers.staff(), pet=pet), timeout=5
        )
        return created.pet.id

    return Directory(directory, add)


@pytest.fixture(params=["double", "real pet service"])
async def directory(request: pytest.FixtureRequest) -> AsyncIterator[Directory]:
    make = {"double": _double, "real pet service": _real}[request.param]
    async with AsyncExitStack() as cleanup:
        yield await make(cleanup)


async def test_a_pet_exists_once_added_and_an_unknown_one_does_not(directory: Directory) -> None:
    pet_id = await directory.add_pet()
    assert await directory.pets.exists(pet_id) is True
    assert await directory.pets.exists(UNKNOWN_PET) is False


async def test_a_reservation_holds_the_pet_for_its_order_alone_and_is_repeatable(
    directory: Directory,
) -> None:
    pet_id = await directory.add_pet()
    await directory.pets.reserve(pet_id, ORDER)
    await directory.pets.reserve(pet_id, ORDER)  # asked again: changes nothing
    with pytest.raises(FailedPrecondition):
        await directory.pets.reserve(pet_id, OTHER_ORDER)


async def test_an_unknown_pet_cannot_be_reserved_or_sold(directory: Directory) -> None:
    with pytest.raises(NotFound):
        await directory.pets.reserve(UNKNOWN_PET, ORDER)
    with pytest.raises(NotFound):
        await directory.pets.sell(UNKNOWN_PET, ORDER)
    await directory.pets.release(UNKNOWN_PET, ORDER)  # nothing to release: changes nothing


async def test_a_release_by_the_holder_frees_the_pet_and_by_another_order_changes_nothing(
    directory: Directory,
) -> None:
    pet_id = await directory.add_pet()
    await directory.pets.reserve(pet_id, ORDER)
    await directory.pets.release(pet_id, OTHER_ORDER)
    with pytest.raises(FailedPrecondition):
        await directory.pets.reserve(pet_id, OTHER_ORDER)
    await directory.pets.release(pet_id, ORDER)
    await directory.pets.reserve(pet_id, OTHER_ORDER)


async def test_only_the_holder_sells_and_a_sold_pet_is_never_reserved_or_released(
    directory: Directory,
) -> None:
    pet_id = await directory.add_pet()
    with pytest.raises(FailedPrecondition):
        await directory.pets.sell(pet_id, ORDER)  # not reserved by it
    await directory.pets.reserve(pet_id, ORDER)
    with pytest.raises(FailedPrecondition):
        await directory.pets.sell(pet_id, OTHER_ORDER)
    await directory.pets.sell(pet_id, ORDER)
    await directory.pets.sell(pet_id, ORDER)  # asked again: changes nothing
    await directory.pets.release(pet_id, ORDER)  # a late release of a sold pet changes nothing
    with pytest.raises(FailedPrecondition):
        await directory.pets.reserve(pet_id, OTHER_ORDER)
    assert await directory.pets.exists(pet_id) is True


async def test_the_grpc_stand_in_answers_exists_as_the_real_service_does() -> None:
    async with (
        pet_backend() as stand_in,
        grpc_pet_directory(stand_in.address, timeout_seconds=5, signer=signer(ORDER_SERVICE)) as pets,
    ):
        pet_id = await stand_in.add_pet()
        assert await pets.exists(pet_id) is True
        assert await pets.exists(UNKNOWN_PET) is False
