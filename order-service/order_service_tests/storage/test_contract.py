"""One contract, both stores: the embedded store must behave exactly like the MongoDB one."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_order.storage.base import OrderStore, Status, Step, StoredOrder, Transition
from petstore_order.validation import MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS

APPROVED = order_pb2.ORDER_STATUS_APPROVED
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def an_order(pet_id: int = 1, **fields: object) -> order_pb2.Order:
    return order_pb2.Order(pet_id=pet_id, quantity=1, status=order_pb2.ORDER_STATUS_PLACED, **fields)  # type: ignore[arg-type]


def a_full_order(nanos: int = 123_000_000) -> order_pb2.Order:
    return order_pb2.Order(
        pet_id=42,
        quantity=3,
        ship_date=Timestamp(seconds=1_795_342_530, nanos=nanos),
        status=APPROVED,
        complete=True,
    )


async def set_status(
    store: OrderStore, order_id: int, *, expected: Status, status: Status, complete: bool
) -> order_pb2.Order | None:
    """A status move of a settled order (what the sale's moves are made of)."""
    change = Transition(
        step_from=None, step_to=None, status_from=expected, status_to=status, complete=complete
    )
    moved = await store.transition(order_id, change, at=T0)
    return None if moved is None else moved.order


def without_id(order: order_pb2.Order) -> order_pb2.Order:
    copy = order_pb2.Order()
    copy.CopyFrom(order)
    copy.ClearField("id")
    return copy


async def test_create_then_get_round_trips_every_field(store: OrderStore) -> None:
    created = await store.create(a_full_order())

    assert created.HasField("id")
    assert created.id > 0
    assert without_id(created) == a_full_order()
    assert await store.get(created.id) == created


async def test_ship_dates_are_kept_to_the_millisecond(store: OrderStore) -> None:
    created = await store.create(a_full_order(nanos=123_456_789))

    assert created.ship_date == Timestamp(seconds=1_795_342_530, nanos=123_000_000)
    assert (await store.get(created.id)).ship_date == created.ship_date


@pytest.mark.parametrize(
    "ship_date",
    [
        Timestamp(seconds=MIN_TIMESTAMP_SECONDS),
        Timestamp(seconds=MAX_TIMESTAMP_SECONDS, nanos=999_000_000),
        Timestamp(seconds=-1, nanos=999_000_000),
        Timestamp(seconds=0),
    ],
    ids=["year-1", "year-9999", "before-epoch", "epoch"],
)
async def test_ship_dates_at_the_edges_round_trip(store: OrderStore, ship_date: Timestamp) -> None:
    created = await store.create(an_order(ship_date=ship_date))

    assert (await store.get(created.id)).ship_date == ship_date


async def test_absent_optional_fields_stay_absent(store: OrderStore) -> None:
    created = await store.create(order_pb2.Order(pet_id=5, quantity=2))

    read = await store.get(created.id)
    assert not read.HasField("ship_date")
    assert read.status == order_pb2.ORDER_STATUS_UNSPECIFIED
    assert read.complete is False
    assert (read.pet_id, read.quantity) == (5, 2)


async def test_assigned_ids_are_distinct_and_increasing(store: OrderStore) -> None:
    ids = [(await store.create(an_order())).id for _ in range(3)]

    assert ids == sorted(set(ids))
    assert ids[0] > 0


async def test_client_chosen_id_is_kept(store: OrderStore) -> None:
    created = await store.create(an_order(7, id=2**63 - 1))

    assert created.id == 2**63 - 1
    assert (await store.get(2**63 - 1)).pet_id == 7


async def test_taken_id_is_already_exists_and_never_overwrites(store: OrderStore) -> None:
    await store.create(an_order(1, id=7))

    with pytest.raises(AlreadyExists, match=r"^order 7 already exists$"):
        await store.create(an_order(2, id=7))
    assert (await store.get(7)).pet_id == 1


async def test_concurrent_creates_get_distinct_ids(store: OrderStore) -> None:
    created = await asyncio.gather(*(store.create(an_order(pet_id)) for pet_id in range(1, 41)))

    ids = {order.id for order in created}
    assert len(ids) == 40
    for order in created:
        assert (await store.get(order.id)).pet_id == order.pet_id


async def test_allocation_skips_client_chosen_ids_ahead_of_the_counter(store: OrderStore) -> None:
    await store.create(an_order(20, id=2))
    await store.create(an_order(30, id=3))

    assigned = [(await store.create(an_order())).id for _ in range(2)]

    assert assigned == [1, 4]
    assert [(await store.get(order_id)).pet_id for order_id in (2, 3)] == [20, 30]


async def test_get_of_an_unknown_id_is_not_found(store: OrderStore) -> None:
    with pytest.raises(NotFound, match=r"^order 404 not found$"):
        await store.get(404)


async def test_delete_removes_the_order(store: OrderStore) -> None:
    created = await store.create(an_order())
    kept = await store.create(an_order())

    await store.delete(created.id)

    with pytest.raises(NotFound, match=rf"^order {created.id} not found$"):
        await store.get(created.id)
    with pytest.raises(NotFound, match=rf"^order {created.id} not found$"):
        await store.delete(created.id)
    assert await store.get(kept.id) == kept


async def test_stored_orders_are_copies(store: OrderStore) -> None:
    order = an_order(3)
    created = await store.create(order)
    order.pet_id = 99
    created.quantity = 99

    read = await store.get(created.id)
    assert (read.pet_id, read.quantity) == (3, 1)


async def test_the_owner_is_kept_and_an_order_without_one_has_none(store: OrderStore) -> None:
    owned = await store.create(an_order(owner_user_id=41))
    unowned = await store.create(an_order())

    assert (await store.get(owned.id)).owner_user_id == 41
    assert not (await store.get(unowned.id)).HasField("owner_user_id")


async def test_new_ids_are_distinct_and_usable(store: OrderStore) -> None:
    ids = [await store.new_id() for _ in range(3)]

    assert len(set(ids)) == 3
    assert all(order_id > 0 for order_id in ids)
    created = await store.create(an_order(id=ids[0]))
    assert await store.get(ids[0]) == created


async def test_set_status_is_a_compare_and_set(store: OrderStore) -> None:
    created = await store.create(an_order())

    moved = await set_status(
        store, created.id, expected=order_pb2.ORDER_STATUS_PLACED, status=APPROVED, complete=False
    )
    stale = await set_status(
        store,
        created.id,
        expected=order_pb2.ORDER_STATUS_PLACED,
        status=order_pb2.ORDER_STATUS_DELIVERED,
        complete=True,
    )

    assert moved is not None
    assert (moved.status, moved.complete) == (APPROVED, False)
    assert stale is None
    assert await store.get(created.id) == moved
    with pytest.raises(NotFound):
        await set_status(store, created.id + 1000, expected=APPROVED, status=APPROVED, complete=False)


async def test_delete_only_if_keeps_an_order_whose_status_moved_on(store: OrderStore) -> None:
    created = await store.create(order_pb2.Order(pet_id=1, quantity=1, status=APPROVED))

    assert await store.delete(created.id, only_if=order_pb2.ORDER_STATUS_PLACED) is False
    assert await store.get(created.id) == created
    assert await store.delete(created.id, only_if=APPROVED) is True
    with pytest.raises(NotFound):
        await store.get(created.id)


async def test_of_racing_moves_from_one_status_exactly_one_wins(store: OrderStore) -> None:
    created = await store.create(an_order())

    moved = await asyncio.gather(
        *(
            set_status(
                store, created.id, expected=order_pb2.ORDER_STATUS_PLACED, status=APPROVED, complete=False
            )
            for _ in range(8)
        )
    )

    assert sum(order is not None for order in moved) == 1


PLACED = order_pb2.ORDER_STATUS_PLACED
DELIVERED = order_pb2.ORDER_STATUS_DELIVERED


async def _some_orders(store: OrderStore) -> list[order_pb2.Order]:
    """Orders of two customers (7 and 8) and of nobody, for two pets, in every status."""
    made = [
        an_order(1, id=1, owner_user_id=7),
        an_order(2, id=2, owner_user_id=8),
        order_pb2.Order(id=3, pet_id=1, quantity=1, owner_user_id=7, status=APPROVED),
        an_order(1, id=4),  # staff's: nobody owns it
        order_pb2.Order(id=5, pet_id=2, quantity=1, owner_user_id=7),  # stored without a status
        order_pb2.Order(id=6, pet_id=2, quantity=1, owner_user_id=7, status=DELIVERED),
    ]
    return [await store.create(order) for order in made]


async def _found_ids(store: OrderStore, **filters: object) -> list[int]:
    arguments: dict[str, object] = {
        "statuses": (),
        "pet_id": None,
        "owner_user_id": None,
        "after_id": 0,
        "limit": 100,
    }
    arguments.update(filters)
    return [order.id for order in await store.find(**arguments)]  # type: ignore[arg-type]


async def test_find_without_filters_lists_every_order_by_id(store: OrderStore) -> None:
    orders = await _some_orders(store)

    found = await store.find(statuses=(), pet_id=None, owner_user_id=None, after_id=0, limit=100)

    assert found == orders


async def test_find_by_owner_shows_only_that_customers_orders(store: OrderStore) -> None:
    await _some_orders(store)

    assert await _found_ids(store, owner_user_id=7) == [1, 3, 5, 6]
    assert await _found_ids(store, owner_user_id=8) == [2]
    assert await _found_ids(store, owner_user_id=9) == []


async def test_find_by_status_reads_an_absent_status_as_placed(store: OrderStore) -> None:
    await _some_orders(store)

    assert await _found_ids(store, statuses=[PLACED]) == [1, 2, 4, 5]
    assert await _found_ids(store, statuses=[APPROVED, DELIVERED]) == [3, 6]
    assert await _found_ids(store, statuses=[DELIVERED, DELIVERED]) == [6]
    # All but delivered (the open-order count's): the absent status is among them.
    assert await _found_ids(store, statuses=[PLACED, APPROVED]) == [1, 2, 3, 4, 5]
    assert await _found_ids(store, owner_user_id=7, statuses=[PLACED, APPROVED]) == [1, 3, 5]
    assert await _found_ids(store, statuses=[PLACED, APPROVED, DELIVERED]) == [1, 2, 3, 4, 5, 6]


async def test_find_filters_combine(store: OrderStore) -> None:
    await _some_orders(store)

    assert await _found_ids(store, owner_user_id=7, pet_id=1) == [1, 3]
    assert await _found_ids(store, owner_user_id=7, pet_id=2, statuses=[PLACED]) == [5]
    assert await _found_ids(store, pet_id=2) == [2, 5, 6]


async def test_find_pages_after_an_id(store: OrderStore) -> None:
    await _some_orders(store)

    assert await _found_ids(store, limit=2) == [1, 2]
    assert await _found_ids(store, after_id=2, limit=2) == [3, 4]
    assert await _found_ids(store, owner_user_id=7, after_id=3, limit=1) == [5]
    assert await _found_ids(store, after_id=6) == []


# The state of an order's sale (storage.base.Step, Transition): hidden while placing or
# cancelling, recorded with the time of its step, and moved by compare-and-set.


async def test_an_order_being_placed_is_hidden_but_stored(store: OrderStore) -> None:
    created = await store.create(an_order(5, owner_user_id=7), step=Step.RESERVE, at=T0)

    with pytest.raises(NotFound):
        await store.get(created.id)
    assert await _found_ids(store) == []
    stored = await store.get_stored(created.id)
    assert stored == StoredOrder(created, step=Step.RESERVE, step_at=T0, holds_pet=False)


async def test_placing_clears_the_step_and_records_the_hold(store: OrderStore) -> None:
    created = await store.create(an_order(5), step=Step.RESERVE, at=T0)

    placed = await store.transition(
        created.id, Transition(step_from=Step.RESERVE, step_to=None, holds_pet=True), at=T0
    )
    again = await store.transition(
        created.id, Transition(step_from=Step.RESERVE, step_to=None, holds_pet=True), at=T0
    )

    assert placed == StoredOrder(created, holds_pet=True)
    assert again is None  # no longer at RESERVE: nothing changed
    assert await store.get(created.id) == created
    assert await _found_ids(store) == [created.id]
    assert await store.get_stored(created.id) == placed


async def test_a_transition_checks_the_status_too(store: OrderStore) -> None:
    created = await store.create(an_order(5))
    stale = await store.transition(
        created.id, Transition(step_from=None, step_to=Step.RELEASE, status_from=APPROVED), at=T0
    )
    withdrawn = await store.transition(
        created.id, Transition(step_from=None, step_to=Step.RELEASE, status_from=PLACED), at=T0
    )

    assert stale is None
    assert withdrawn is not None
    assert withdrawn.step == Step.RELEASE
    assert withdrawn.step_at == T0
    with pytest.raises(NotFound):  # being cancelled: hidden
        await store.get(created.id)
    with pytest.raises(NotFound):
        await store.transition(created.id + 1000, Transition(step_from=None, step_to=None), at=T0)


async def test_a_delivered_order_being_sold_stays_visible(store: OrderStore) -> None:
    created = await store.create(order_pb2.Order(pet_id=5, quantity=1, status=APPROVED))
    delivering = Transition(
        step_from=None, step_to=Step.SELL, status_from=APPROVED, status_to=DELIVERED, complete=True
    )

    sold = await store.transition(created.id, delivering, at=T0)

    assert sold is not None
    assert (sold.order.status, sold.order.complete, sold.step) == (DELIVERED, True, Step.SELL)
    assert await store.get(created.id) == sold.order
    # A status move waits for the step: only settled orders move.
    assert await set_status(store, created.id, expected=DELIVERED, status=DELIVERED, complete=True) is None


async def test_delete_at_a_step_removes_only_an_order_at_that_step(store: OrderStore) -> None:
    settled = await store.create(an_order(5))
    releasing = await store.create(an_order(6), step=Step.RELEASE, at=T0)

    assert await store.delete(settled.id, step=Step.RELEASE) is False
    assert await store.delete(releasing.id) is False  # not settled
    assert await store.delete(releasing.id, step=Step.RELEASE) is True
    with pytest.raises(NotFound):
        await store.get_stored(releasing.id)
    assert await store.get(settled.id) == settled


async def test_unsettled_lists_steps_recorded_before_a_time_oldest_first(store: OrderStore) -> None:
    late = await store.create(an_order(1), step=Step.RESERVE, at=T0 + timedelta(seconds=20))
    early = await store.create(an_order(2), step=Step.RELEASE, at=T0)
    middle = await store.create(an_order(3), step=Step.RESERVE, at=T0 + timedelta(seconds=10))
    selling = await store.create(an_order(5), step=Step.SELL, at=T0 + timedelta(seconds=5))
    await store.create(an_order(4))  # settled: never listed

    due = await store.unsettled(recorded_before=T0 + timedelta(seconds=15), limit=10)
    first = await store.unsettled(recorded_before=T0 + timedelta(seconds=60), limit=1)

    # Oldest first across every step, the limit over all of them.
    assert [stored.order.id for stored in due] == [early.id, selling.id, middle.id]
    assert [stored.step for stored in due] == [Step.RELEASE, Step.SELL, Step.RESERVE]
    assert [stored.order.id for stored in first] == [early.id]
    assert late.id not in [stored.order.id for stored in due]


async def test_of_racing_transitions_from_one_step_exactly_one_wins(store: OrderStore) -> None:
    created = await store.create(an_order(5), step=Step.RESERVE, at=T0)
    place = Transition(step_from=Step.RESERVE, step_to=None, holds_pet=True)
    withdraw = Transition(step_from=Step.RESERVE, step_to=Step.RELEASE)

    results = await asyncio.gather(
        *(store.transition(created.id, change, at=T0) for change in (place, withdraw) * 4)
    )

    assert sum(result is not None for result in results) == 1
