"""One contract, both stores: the embedded store must behave exactly like the MongoDB one."""

from __future__ import annotations

import asyncio

import pytest

from petstore.pet.v1 import pet_pb2
from petstore_common.errors import Aborted, AlreadyExists, FailedPrecondition, NotFound
from petstore_pet.changes import ChangesUnsupported, PetChange, Subscription
from petstore_pet.storage.base import PET_FIELDS, PetImage, PetStore

AVAILABLE = pet_pb2.PET_STATUS_AVAILABLE
PENDING = pet_pb2.PET_STATUS_PENDING
SOLD = pet_pb2.PET_STATUS_SOLD


def a_pet(name: str = "Rex", **fields: object) -> pet_pb2.Pet:
    return pet_pb2.Pet(name=name, **fields)  # type: ignore[arg-type]


def a_full_pet() -> pet_pb2.Pet:
    return pet_pb2.Pet(
        name="Rex",
        category=pet_pb2.Category(id=4, name="Dogs"),
        photo_urls=["https://example.com/rex.png", "https://example.com/rex2.png"],
        tags=[pet_pb2.Tag(id=9, name="good"), pet_pb2.Tag(name="loud"), pet_pb2.Tag(id=3)],
        status=PENDING,
    )


def without_id(pet: pet_pb2.Pet) -> pet_pb2.Pet:
    """The pet's content: what the client gave (no id, no server-set version)."""
    copy = pet_pb2.Pet()
    copy.CopyFrom(pet)
    copy.ClearField("id")
    copy.ClearField("version")
    return copy


async def test_create_then_get_round_trips_every_field(store: PetStore) -> None:
    created = await store.create(a_full_pet())

    assert created.HasField("id")
    assert created.id > 0
    assert without_id(created) == a_full_pet()
    assert await store.get(created.id) == created


async def test_absent_optional_fields_stay_absent(store: PetStore) -> None:
    created = await store.create(a_pet(category=pet_pb2.Category(), tags=[pet_pb2.Tag(name="x")]))

    read = await store.get(created.id)
    assert read.HasField("category")
    assert not read.category.HasField("id")
    assert not read.category.HasField("name")
    assert not read.tags[0].HasField("id")
    assert read.status == pet_pb2.PET_STATUS_UNSPECIFIED
    assert list(read.photo_urls) == []
    assert not (await store.get((await store.create(a_pet())).id)).HasField("category")


async def test_existing_names_the_stored_pets_among_those_asked(store: PetStore) -> None:
    kept = await store.create(a_pet())
    deleted = await store.create(a_pet())
    await store.delete(deleted.id)

    assert await store.existing([kept.id, deleted.id, kept.id + 1000, kept.id]) == {kept.id}
    assert await store.existing([]) == set()


async def test_assigned_ids_are_distinct_and_increasing(store: PetStore) -> None:
    ids = [(await store.create(a_pet())).id for _ in range(3)]

    assert ids == sorted(set(ids))
    assert ids[0] > 0


async def test_client_chosen_id_is_kept(store: PetStore) -> None:
    created = await store.create(a_pet(id=7))

    assert created.id == 7
    assert (await store.get(7)).name == "Rex"


async def test_taken_id_is_already_exists_and_never_overwrites(store: PetStore) -> None:
    await store.create(a_pet("First", id=7))

    with pytest.raises(AlreadyExists, match=r"^pet 7 already exists$"):
        await store.create(a_pet("Second", id=7))
    assert (await store.get(7)).name == "First"


async def test_concurrent_creates_get_distinct_ids(store: PetStore) -> None:
    created = await asyncio.gather(*(store.create(a_pet(f"pet-{n}")) for n in range(40)))

    ids = {pet.id for pet in created}
    assert len(ids) == 40
    for pet in created:
        assert (await store.get(pet.id)).name == pet.name


async def test_allocation_skips_a_client_chosen_id_ahead_of_the_counter(store: PetStore) -> None:
    await store.create(a_pet("Chosen", id=2))

    assigned = [(await store.create(a_pet())).id for _ in range(2)]

    assert assigned == [1, 3]
    assert (await store.get(2)).name == "Chosen"


async def test_get_of_an_unknown_id_is_not_found(store: PetStore) -> None:
    with pytest.raises(NotFound, match=r"^pet 404 not found$"):
        await store.get(404)


async def test_update_of_every_field_replaces_the_pet(store: PetStore) -> None:
    created = await store.create(a_full_pet())

    updated = await store.update(pet_pb2.Pet(id=created.id, name="Max", photo_urls=["u"]), PET_FIELDS)

    assert updated == pet_pb2.Pet(id=created.id, name="Max", photo_urls=["u"], version=2)
    assert await store.get(created.id) == updated


async def test_update_of_some_fields_keeps_the_others(store: PetStore) -> None:
    created = await store.create(a_full_pet())

    updated = await store.update(pet_pb2.Pet(id=created.id, name="Max", status=SOLD), ["name", "status"])

    expected = pet_pb2.Pet()
    expected.CopyFrom(created)
    expected.name, expected.status, expected.version = "Max", SOLD, 2
    assert updated == expected
    assert await store.get(created.id) == expected


async def test_every_write_sets_the_next_version(store: PetStore) -> None:
    created = await store.create(a_full_pet())
    first = await store.update(pet_pb2.Pet(id=created.id, name="Max"), ["name"])
    second = await store.update(pet_pb2.Pet(id=created.id, name="Max"), ["name"])  # same content

    assert (created.version, first.version, second.version) == (1, 2, 3)
    assert (await store.get(created.id)).version == 3


async def test_a_version_sent_by_the_client_is_ignored(store: PetStore) -> None:
    created = await store.create(a_pet(version=41))
    updated = await store.update(pet_pb2.Pet(id=created.id, name="Max", version=99), ["name"])

    assert (created.version, updated.version) == (1, 2)


async def test_a_conditional_update_on_the_stored_version_writes(store: PetStore) -> None:
    created = await store.create(a_full_pet())

    updated = await store.update(pet_pb2.Pet(id=created.id, name="Max"), ["name"], accepted_versions={7, 1})

    assert (updated.name, updated.version) == ("Max", 2)


@pytest.mark.parametrize("accepted", [{1}, set()], ids=["stale", "none"])
async def test_a_conditional_update_on_another_version_changes_nothing(
    store: PetStore, accepted: set[int]
) -> None:
    created = await store.create(a_full_pet())
    await store.update(pet_pb2.Pet(id=created.id, name="Max"), ["name"])

    with pytest.raises(FailedPrecondition, match=f"pet {created.id} was changed since the version given"):
        await store.update(pet_pb2.Pet(id=created.id, name="Bob"), ["name"], accepted_versions=accepted)

    stored = await store.get(created.id)
    assert (stored.name, stored.version) == ("Max", 2)


async def test_a_conditional_update_of_an_absent_pet_is_not_found(store: PetStore) -> None:
    with pytest.raises(NotFound):
        await store.update(pet_pb2.Pet(id=404, name="Max"), ["name"], accepted_versions={1})


async def test_concurrent_updates_each_get_their_own_version(store: PetStore) -> None:
    created = await store.create(a_full_pet())

    updates = await asyncio.gather(
        *(store.update(pet_pb2.Pet(id=created.id, name=f"n{i}"), ["name"]) for i in range(8))
    )

    assert sorted(pet.version for pet in updates) == list(range(2, 10))
    assert (await store.get(created.id)).version == 9


async def test_of_concurrent_updates_on_one_version_exactly_one_wins(store: PetStore) -> None:
    created = await store.create(a_full_pet())

    results = await asyncio.gather(
        *(
            store.update(pet_pb2.Pet(id=created.id, name=f"n{i}"), ["name"], accepted_versions={1})
            for i in range(6)
        ),
        return_exceptions=True,
    )

    winners = [result for result in results if isinstance(result, pet_pb2.Pet)]
    assert len(winners) == 1
    assert all(isinstance(result, FailedPrecondition) for result in results if result not in winners)
    assert await store.get(created.id) == winners[0]


async def _changes(subscription: Subscription, count: int) -> list[PetChange]:
    changes: list[PetChange] = []
    async with asyncio.timeout(10):
        while len(changes) < count:
            changes += await subscription.next_batch(1.0)
    return changes


async def test_every_committed_write_is_streamed_in_commit_order(
    store: PetStore, request: pytest.FixtureRequest
) -> None:
    try:
        async with store.changes.subscribe() as subscription:
            created = await store.create(a_full_pet())
            await store.update(pet_pb2.Pet(id=created.id, name="Max"), ["name"])
            other = await store.create(a_pet())
            await store.delete(created.id)
            await store.add_image(
                PetImage("i1", other.id, "image/png", b"x", "", ""), max_images=16
            )  # not a pet write

            changes = await _changes(subscription, 4)
    except ChangesUnsupported:
        # Only a server without change streams may refuse, and FerretDB says who it is.
        build_info = await request.getfixturevalue("mongo_db").command("buildInfo")
        assert "ferretdbVersion" in build_info
        return
    assert [(c.pet_id, c.deleted) for c in changes] == [
        (created.id, False),
        (created.id, False),
        (other.id, False),
        (created.id, True),
    ]
    # The deletion's version is not known to a change stream (0); the others are exact.
    assert [c.version for c in changes[:3]] == [1, 2, 1]


async def test_update_can_clear_a_field(store: PetStore) -> None:
    created = await store.create(a_full_pet())

    updated = await store.update(pet_pb2.Pet(id=created.id), ["category", "status", "tags"])

    assert not updated.HasField("category")
    assert updated.status == pet_pb2.PET_STATUS_UNSPECIFIED
    assert list(updated.tags) == []
    assert updated.name == "Rex"


async def test_update_of_an_unknown_id_is_not_found(store: PetStore) -> None:
    with pytest.raises(NotFound, match=r"^pet 99 not found$"):
        await store.update(a_pet(id=99), PET_FIELDS)


async def test_delete_removes_the_pet(store: PetStore) -> None:
    created = await store.create(a_pet())

    await store.delete(created.id)

    with pytest.raises(NotFound):
        await store.get(created.id)
    with pytest.raises(NotFound, match=rf"^pet {created.id} not found$"):
        await store.delete(created.id)


async def test_find_by_status_orders_by_id(store: PetStore) -> None:
    for pet_id, status in [(5, AVAILABLE), (2, SOLD), (3, AVAILABLE), (1, PENDING), (4, AVAILABLE)]:
        await store.create(a_pet(id=pet_id, status=status))
    await store.create(a_pet(id=6))  # no status: matches no status filter

    found = await store.find(statuses=[AVAILABLE, PENDING], tag_names=[], after_id=0, limit=100)

    assert [pet.id for pet in found] == [1, 3, 4, 5]


async def test_find_by_tags_returns_each_pet_once(store: PetStore) -> None:
    await store.create(a_pet(id=1, tags=[pet_pb2.Tag(name="a"), pet_pb2.Tag(name="b")]))
    await store.create(a_pet(id=2, tags=[pet_pb2.Tag(name="c")]))
    await store.create(a_pet(id=3, tags=[pet_pb2.Tag(name="b"), pet_pb2.Tag(id=1)]))
    await store.create(a_pet(id=4, tags=[pet_pb2.Tag(id=5)]))

    found = await store.find(statuses=[], tag_names=["a", "b"], after_id=0, limit=100)

    assert [pet.id for pet in found] == [1, 3]


async def test_find_combines_statuses_and_tags_with_or(store: PetStore) -> None:
    await store.create(a_pet(id=1, status=SOLD, tags=[pet_pb2.Tag(name="a")]))
    await store.create(a_pet(id=2, status=SOLD))
    await store.create(a_pet(id=3, tags=[pet_pb2.Tag(name="a")]))
    await store.create(a_pet(id=4, status=PENDING, tags=[pet_pb2.Tag(name="z")]))

    found = await store.find(statuses=[SOLD], tag_names=["a"], after_id=0, limit=100)

    assert [pet.id for pet in found] == [1, 2, 3]


async def test_find_pages_by_last_id_and_limit(store: PetStore) -> None:
    for pet_id in range(1, 8):
        await store.create(a_pet(id=pet_id, status=AVAILABLE if pet_id != 4 else SOLD))

    pages: list[list[int]] = []
    after_id = 0
    while page := await store.find(statuses=[AVAILABLE], tag_names=[], after_id=after_id, limit=2):
        pages.append([pet.id for pet in page])
        after_id = page[-1].id

    assert pages == [[1, 2], [3, 5], [6, 7]]


async def test_find_returns_full_pets(store: PetStore) -> None:
    created = await store.create(a_full_pet())

    assert await store.find(statuses=[PENDING], tag_names=[], after_id=0, limit=1) == [created]


async def test_inventory_counts_every_status(store: PetStore) -> None:
    assert await store.count_by_status() == {"available": 0, "pending": 0, "sold": 0}

    for status in [AVAILABLE, AVAILABLE, SOLD, pet_pb2.PET_STATUS_UNSPECIFIED]:
        await store.create(a_pet(status=status))

    assert await store.count_by_status() == {"available": 2, "pending": 0, "sold": 1}


def an_image(pet_id: int, image_id: str = "0" * 32) -> PetImage:
    return PetImage(
        image_id=image_id,
        pet_id=pet_id,
        content_type="image/png",
        data=b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
        additional_metadata="front view",
        file_name="../rex.png",
    )


async def test_images_are_stored_with_their_pet(store: PetStore) -> None:
    pet = await store.create(a_pet())
    other = await store.create(a_pet())

    await store.add_image(an_image(pet.id, "a" * 32), max_images=16)
    await store.add_image(an_image(other.id, "b" * 32), max_images=16)

    assert await store.list_images(pet.id) == [an_image(pet.id, "a" * 32)]


async def test_an_image_of_an_unknown_pet_is_not_found(store: PetStore) -> None:
    with pytest.raises(NotFound, match=r"^pet 31 not found$"):
        await store.add_image(an_image(31), max_images=16)
    assert await store.list_images(31) == []


async def test_delete_removes_the_pets_images(store: PetStore) -> None:
    pet = await store.create(a_pet())
    other = await store.create(a_pet())
    await store.add_image(an_image(pet.id, "a" * 32), max_images=16)
    await store.add_image(an_image(other.id, "b" * 32), max_images=16)

    await store.delete(pet.id)

    assert await store.list_images(pet.id) == []
    assert len(await store.list_images(other.id)) == 1


async def test_an_image_is_read_back_by_its_pet_and_id(store: PetStore) -> None:
    pet = await store.create(a_pet())
    other = await store.create(a_pet())
    await store.add_image(an_image(pet.id, "a" * 32), max_images=16)

    assert await store.get_image(pet.id, "a" * 32) == an_image(pet.id, "a" * 32)
    with pytest.raises(NotFound, match=rf"^pet {other.id} has no image a{{32}}$"):
        await store.get_image(other.id, "a" * 32)  # the id, under another pet
    with pytest.raises(NotFound, match=rf"^pet {pet.id} has no image c{{32}}$"):
        await store.get_image(pet.id, "c" * 32)


async def test_a_pet_keeps_at_most_max_images(store: PetStore) -> None:
    pet = await store.create(a_pet())
    other = await store.create(a_pet())
    for index in range(3):
        await store.add_image(an_image(pet.id, f"{index:032x}"), max_images=3)

    with pytest.raises(FailedPrecondition, match=rf"^pet {pet.id} has 3 images already: at most 3 are kept$"):
        await store.add_image(an_image(pet.id, "f" * 32), max_images=3)

    assert len(await store.list_images(pet.id)) == 3
    await store.add_image(an_image(other.id, "f" * 32), max_images=3)  # another pet's count is its own


async def test_racing_uploads_never_pass_max_images(store: PetStore) -> None:
    pet = await store.create(a_pet())

    async def add(index: int) -> bool:
        try:
            await store.add_image(an_image(pet.id, f"{index:032x}"), max_images=3)
        except FailedPrecondition:
            return False
        return True

    stored = await asyncio.gather(*(add(index) for index in range(12)))

    assert sum(stored) <= 3  # racers for the last places may all lose; none gets past
    assert len(await store.list_images(pet.id)) == sum(stored)


async def test_delete_image_removes_only_that_image(store: PetStore) -> None:
    pet = await store.create(a_pet())
    await store.add_image(an_image(pet.id, "a" * 32), max_images=2)
    await store.add_image(an_image(pet.id, "b" * 32), max_images=2)

    await store.delete_image("a" * 32)
    await store.delete_image("a" * 32)  # already gone: nothing happens

    assert await store.list_images(pet.id) == [an_image(pet.id, "b" * 32)]
    await store.add_image(an_image(pet.id, "c" * 32), max_images=2)  # its place is free again


async def test_stored_pets_are_copies(store: PetStore) -> None:
    pet = a_pet()
    created = await store.create(pet)
    pet.name = "changed by the caller"
    created.name = "changed too"

    assert (await store.get(created.id)).name == "Rex"


async def test_new_ids_are_distinct_and_usable(store: PetStore) -> None:
    ids = [await store.new_id() for _ in range(3)]

    assert len(set(ids)) == 3
    assert all(pet_id > 0 for pet_id in ids)
    created = await store.create(a_pet(id=ids[0]))
    assert await store.get(ids[0]) == created


# Holds (petstore_pet.holds): an order reserves an available pet, sells it or releases it;
# only the holding order may, and staff may not move a held pet's status nor delete it.


@pytest.mark.parametrize("status", [AVAILABLE, pet_pb2.PET_STATUS_UNSPECIFIED])
async def test_reserving_an_available_pet_makes_it_pending_for_that_order(
    store: PetStore, status: int
) -> None:
    created = await store.create(a_pet(status=status))

    reserved = await store.reserve(created.id, 70)
    again = await store.reserve(created.id, 70)  # the order asks again: nothing changes

    assert (reserved.status, reserved.version) == (PENDING, created.version + 1)
    assert again == reserved
    assert await store.get(created.id) == reserved
    assert await store.holder(created.id) == 70


@pytest.mark.parametrize(("status", "named"), [(PENDING, "pending"), (SOLD, "sold")])
async def test_a_pet_that_is_not_available_cannot_be_reserved(
    store: PetStore, status: int, named: str
) -> None:
    created = await store.create(a_pet(status=status))

    with pytest.raises(FailedPrecondition, match=f"pet {created.id} is {named}"):
        await store.reserve(created.id, 70)
    assert await store.get(created.id) == created
    assert await store.holder(created.id) is None
    with pytest.raises(NotFound):
        await store.reserve(created.id + 1000, 70)


async def test_a_reserved_pet_cannot_be_reserved_by_another_order(store: PetStore) -> None:
    created = await store.create(a_pet(status=AVAILABLE))
    await store.reserve(created.id, 70)

    with pytest.raises(FailedPrecondition, match="is pending"):
        await store.reserve(created.id, 71)
    assert await store.holder(created.id) == 70


async def test_of_racing_reservations_exactly_one_wins(store: PetStore) -> None:
    created = await store.create(a_pet(status=AVAILABLE))

    results = await asyncio.gather(
        *(store.reserve(created.id, order_id) for order_id in range(1, 9)), return_exceptions=True
    )

    assert sum(not isinstance(result, Exception) for result in results) == 1
    assert all(isinstance(result, FailedPrecondition) for result in results if isinstance(result, Exception))
    assert (await store.get(created.id)).status == PENDING


async def test_only_the_holding_order_releases_a_pending_pet(store: PetStore) -> None:
    created = await store.create(a_pet(status=AVAILABLE))
    await store.reserve(created.id, 70)

    assert await store.release(created.id, 71) is False
    assert (await store.get(created.id)).status == PENDING
    assert await store.release(created.id, 70) is True
    assert await store.release(created.id, 70) is False  # a repeated release changes nothing
    assert (await store.get(created.id)).status == AVAILABLE
    assert await store.holder(created.id) is None
    assert await store.release(created.id + 1000, 70) is False  # absent: nothing to release
    # Free again, for another order; a late release by the first changes nothing.
    await store.reserve(created.id, 72)
    assert await store.release(created.id, 70) is False
    assert await store.holder(created.id) == 72


async def test_selling_makes_the_held_pet_sold_and_final(store: PetStore) -> None:
    created = await store.create(a_pet(status=AVAILABLE))
    await store.reserve(created.id, 70)
    with pytest.raises(FailedPrecondition, match="not held by order 71"):
        await store.sell(created.id, 71)

    sold = await store.sell(created.id, 70)

    assert sold.status == SOLD
    assert await store.sell(created.id, 70) == sold  # asked again: nothing changes
    assert await store.release(created.id, 70) is False  # a sale is not undone
    assert await store.get(created.id) == sold
    assert await store.holder(created.id) == 70
    with pytest.raises(NotFound):
        await store.sell(created.id + 1000, 70)


async def test_staff_cannot_move_a_held_pets_status_nor_delete_it(store: PetStore) -> None:
    created = await store.create(a_pet(status=AVAILABLE))
    reserved = await store.reserve(created.id, 70)
    renamed = a_pet("Rex II", id=created.id, status=PENDING)

    with pytest.raises(Aborted, match="held by order 70"):
        await store.update(a_pet(id=created.id, status=AVAILABLE), PET_FIELDS)
    with pytest.raises(Aborted, match="held by order 70"):
        await store.delete(created.id)
    assert await store.get(created.id) == reserved
    edited = await store.update(renamed, PET_FIELDS)  # its status kept: an edit is fine
    assert (edited.name, edited.status) == ("Rex II", PENDING)
    assert await store.holder(created.id) == 70


async def test_a_sold_pet_is_the_staffs_again(store: PetStore) -> None:
    created = await store.create(a_pet(status=AVAILABLE))
    await store.reserve(created.id, 70)
    await store.sell(created.id, 70)

    edited = await store.update(a_pet("Rex II", id=created.id, status=SOLD), PET_FIELDS)
    assert await store.holder(created.id) == 70  # its status kept: still the sale's record
    returned = await store.update(a_pet(id=created.id, status=AVAILABLE), ["status"])

    assert edited.status == SOLD
    assert returned.status == AVAILABLE
    assert await store.holder(created.id) is None  # the hold ended with the sale's status
    await store.reserve(created.id, 71)  # and it can be ordered again
    assert await store.holder(created.id) == 71


async def test_the_hold_survives_an_update_of_every_field(store: PetStore) -> None:
    created = await store.create(a_pet(status=AVAILABLE))
    await store.reserve(created.id, 70)

    await store.update(a_pet("Max", id=created.id, status=PENDING), PET_FIELDS)

    assert await store.holder(created.id) == 70
    assert await store.release(created.id, 70) is True
