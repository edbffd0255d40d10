"""The order event outbox, one contract for both stores: each change records exactly its event,
in sequence, with the order after it; deletion keeps the events readable; acknowledgement
forgets them, idempotently; pages and the per-order bound hold. The MongoDB-only tests below read
the raw documents (what a 1.0.0 replica reads) and cut a deletion short."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from prometheus_client import REGISTRY
from pymongo.asynchronous.database import AsyncDatabase

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common.errors import NotFound
from petstore_order.storage.base import EventType, OrderStore, Status, Step, Transition
from petstore_order.storage.documents import Document
from petstore_order.storage.events import MAX_EVENTS_PER_ORDER
from petstore_order.storage.mongo import MongoOrderStore

PLACED = order_pb2.ORDER_STATUS_PLACED
APPROVED = order_pb2.ORDER_STATUS_APPROVED
DELIVERED = order_pb2.ORDER_STATUS_DELIVERED
E = order_service_pb2
T0 = datetime(2026, 1, 1, 12, 0, 0, 123_456, tzinfo=UTC)
"""Microseconds included: an event's time is kept to the millisecond by both stores."""


def an_order(**fields: Any) -> order_pb2.Order:
    return order_pb2.Order(pet_id=7, quantity=2, status=PLACED, owner_user_id=5, **fields)


async def placed_order(store: OrderStore) -> order_pb2.Order:
    """An order stored at RESERVE, then placed with its PLACED event (as the sale does)."""
    created = await store.create(an_order(), step=Step.RESERVE, at=T0)
    placed = await store.transition(
        created.id,
        Transition(step_from=Step.RESERVE, step_to=None, holds_pet=True, event=E.ORDER_EVENT_TYPE_PLACED),
        at=T0,
    )
    assert placed is not None
    return placed.order


async def move(
    store: OrderStore, order_id: int, source: Status, target: Status, event: EventType | None
) -> bool:
    change = Transition(step_from=None, step_to=None, status_from=source, status_to=target, event=event)
    return await store.transition(order_id, change, at=T0 + timedelta(seconds=1)) is not None


def summary(events: list[order_service_pb2.OrderEvent]) -> list[tuple[int, int, int, int]]:
    """(order id, sequence, type, the order's status in the event) of each event."""
    return [(event.order.id, event.sequence, event.type, event.order.status) for event in events]


async def test_each_change_records_exactly_its_event_in_sequence_with_the_order_after_it(
    store: OrderStore,
) -> None:
    order = await placed_order(store)
    assert await move(store, order.id, PLACED, APPROVED, E.ORDER_EVENT_TYPE_APPROVED)
    assert await move(store, order.id, APPROVED, DELIVERED, E.ORDER_EVENT_TYPE_DELIVERED)

    events = await store.read_events(limit=10)

    assert summary(events) == [
        (order.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED),
        (order.id, 2, E.ORDER_EVENT_TYPE_APPROVED, APPROVED),
        (order.id, 3, E.ORDER_EVENT_TYPE_DELIVERED, DELIVERED),
    ]
    assert events[0].order == order
    assert events[0].time == Timestamp(seconds=int(T0.timestamp()), nanos=123_000_000)
    assert len({event.id for event in events}) == 3
    assert all(len(event.id) == 26 for event in events)


async def test_a_refused_move_and_a_change_without_an_event_record_nothing(store: OrderStore) -> None:
    order = await placed_order(store)

    assert not await move(store, order.id, APPROVED, DELIVERED, E.ORDER_EVENT_TYPE_DELIVERED)  # not approved
    assert await move(store, order.id, PLACED, PLACED, None)  # the sale records nothing for it

    assert summary(await store.read_events(limit=10)) == [(order.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED)]


async def test_an_order_created_with_its_event_carries_its_drawn_id(store: OrderStore) -> None:
    created = await store.create(an_order(), at=T0, event=E.ORDER_EVENT_TYPE_PLACED)

    [event] = await store.read_events(limit=10)

    assert (event.sequence, event.type, event.order) == (1, E.ORDER_EVENT_TYPE_PLACED, created)


async def test_concurrent_changes_get_gapless_unique_sequences(store: OrderStore) -> None:
    order = await placed_order(store)
    # Twenty writers, none refused (no status compared): each must get its own sequence.
    change = Transition(step_from=None, step_to=None, event=E.ORDER_EVENT_TYPE_APPROVED)
    results = await asyncio.gather(*(store.transition(order.id, change, at=T0) for _ in range(20)))

    assert all(result is not None for result in results)
    sequences = [event.sequence for event in await store.read_events(limit=10)]
    assert sequences == list(range(1, 22))


async def test_racing_moves_record_one_event(store: OrderStore) -> None:
    order = await placed_order(store)

    won = await asyncio.gather(
        *(move(store, order.id, PLACED, APPROVED, E.ORDER_EVENT_TYPE_APPROVED) for _ in range(8))
    )

    assert won.count(True) == 1
    assert [event.sequence for event in await store.read_events(limit=10)] == [1, 2]


async def test_a_deleted_orders_events_stay_readable_until_acknowledged_then_nothing_is_left(
    store: OrderStore,
) -> None:
    order = await placed_order(store)
    hidden = await store.transition(
        order.id,
        Transition(
            step_from=None, step_to=Step.RELEASE, status_from=PLACED, event=E.ORDER_EVENT_TYPE_CANCELLED
        ),
        at=T0,
    )
    assert hidden is not None
    with pytest.raises(NotFound):
        await store.get(order.id)  # hidden from the moment its event is recorded

    assert await store.delete(order.id, step=Step.RELEASE)

    with pytest.raises(NotFound):
        await store.get_stored(order.id)
    events = await store.read_events(limit=10)
    assert summary(events) == [
        (order.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED),
        (order.id, 2, E.ORDER_EVENT_TYPE_CANCELLED, PLACED),
    ]
    assert events[1].order == order  # as it was when deleted
    await store.ack_events(order.id, 2)
    assert await store.read_events(limit=10) == []


async def test_an_order_stored_under_a_deleted_ones_id_waits_until_those_events_are_acknowledged(
    store: OrderStore,
) -> None:
    """Staff may choose ids: a new order under a deleted one's id starts its sequence again, so
    its events come only once the deleted order's are acknowledged (the same subject's events in
    order), and an acknowledgement meant for the deleted order's never forgets the new one's."""
    order = await placed_order(store)
    hidden = await store.transition(
        order.id,
        Transition(
            step_from=None, step_to=Step.RELEASE, status_from=PLACED, event=E.ORDER_EVENT_TYPE_DELETED
        ),
        at=T0,
    )
    assert hidden is not None
    assert await store.delete(order.id, step=Step.RELEASE)
    again = await store.create(
        an_order(id=order.id, ship_date=Timestamp(seconds=86_400)), event=E.ORDER_EVENT_TYPE_PLACED, at=T0
    )

    assert summary(await store.read_events(limit=10)) == [
        (order.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED),
        (order.id, 2, E.ORDER_EVENT_TYPE_DELETED, PLACED),
    ]
    await store.ack_events(order.id, 2)
    events = await store.read_events(limit=10)
    assert summary(events) == [(order.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED)]
    assert events[0].order == again


async def test_acknowledging_forgets_up_to_the_sequence_and_again_changes_nothing(store: OrderStore) -> None:
    order = await placed_order(store)
    assert await move(store, order.id, PLACED, APPROVED, E.ORDER_EVENT_TYPE_APPROVED)

    await store.ack_events(order.id, 1)
    await store.ack_events(order.id, 1)
    await store.ack_events(order.id + 1000, 5)  # an unknown order: nothing to do

    assert summary(await store.read_events(limit=10)) == [
        (order.id, 2, E.ORDER_EVENT_TYPE_APPROVED, APPROVED)
    ]
    await store.ack_events(order.id, 2)
    assert await store.read_events(limit=10) == []
    # The next event keeps counting: sequences are never reused.
    assert await move(store, order.id, APPROVED, DELIVERED, E.ORDER_EVENT_TYPE_DELIVERED)
    assert [event.sequence for event in await store.read_events(limit=10)] == [3]


async def test_a_page_holds_at_most_its_orders_deleted_ones_first(store: OrderStore) -> None:
    orders = [await placed_order(store) for _ in range(4)]
    assert await move(store, orders[0].id, PLACED, APPROVED, E.ORDER_EVENT_TYPE_APPROVED)
    await store.transition(
        orders[3].id,
        Transition(
            step_from=None, step_to=Step.RELEASE, status_from=PLACED, event=E.ORDER_EVENT_TYPE_DELETED
        ),
        at=T0,
    )
    assert await store.delete(orders[3].id, step=Step.RELEASE)
    await store.create(an_order(), step=Step.RESERVE, at=T0)  # being placed: no event yet

    page = await store.read_events(limit=2)

    assert [(order_id, sequence) for order_id, sequence, _, _ in summary(page)] == [
        (orders[3].id, 1),
        (orders[3].id, 2),
        (orders[0].id, 1),
        (orders[0].id, 2),
    ]
    assert len({event.order.id for event in await store.read_events(limit=100)}) == 4


async def test_an_order_keeps_at_most_the_bound_dropping_the_oldest_and_counting_them(
    store: OrderStore,
) -> None:
    order = await placed_order(store)
    dropped_before = REGISTRY.get_sample_value("petstore_order_events_dropped_total") or 0.0
    change = Transition(step_from=None, step_to=None, event=E.ORDER_EVENT_TYPE_APPROVED)
    for _ in range(MAX_EVENTS_PER_ORDER + 5):
        assert await store.transition(order.id, change, at=T0) is not None

    events = await store.read_events(limit=10)

    assert [event.sequence for event in events] == list(range(7, MAX_EVENTS_PER_ORDER + 7))
    assert REGISTRY.get_sample_value("petstore_order_events_dropped_total") == dropped_before + 6


async def test_deleted_orders_events_are_purged_once_older_than_asked(store: OrderStore) -> None:
    order = await placed_order(store)
    kept = await placed_order(store)
    hide = Transition(step_from=None, step_to=Step.RELEASE, event=E.ORDER_EVENT_TYPE_DELETED)
    await store.transition(order.id, hide, at=T0)
    assert await store.delete(order.id, step=Step.RELEASE)

    assert await store.purge_deleted_events(older_than=timedelta(hours=1)) == 0
    assert len(await store.read_events(limit=10)) == 3
    assert await store.purge_deleted_events(older_than=timedelta(0)) == 1

    assert summary(await store.read_events(limit=10)) == [(kept.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED)]
    await store.ack_events(order.id, 2)  # a late acknowledgement: nothing left to forget
    assert await store.purge_deleted_events(older_than=timedelta(0)) == 0


# --- MongoDB: the documents themselves ------------------------------------------------------------


@pytest.mark.mongo
async def test_an_order_written_by_1_0_0_records_its_first_event_and_is_deleted_with_it(
    mongo_store: MongoOrderStore, mongo_db: AsyncDatabase[Document]
) -> None:
    await mongo_db["orders"].insert_one(
        {"_id": 9, "pet_id": 7, "quantity": 1, "status": "placed", "complete": False}
    )

    assert await move(mongo_store, 9, PLACED, APPROVED, E.ORDER_EVENT_TYPE_APPROVED)
    hidden = await mongo_store.transition(
        9, Transition(step_from=None, step_to=Step.RELEASE, event=E.ORDER_EVENT_TYPE_DELETED), at=T0
    )

    assert hidden is not None
    stored = await mongo_db["orders"].find_one({"_id": 9})
    assert stored is not None
    # What a 1.0.0 replica reads: a step it knows, which hides the order from it too.
    assert stored["sale_step"] == "release"
    assert await mongo_store.delete(9, step=Step.RELEASE)
    assert [event.sequence for event in await mongo_store.read_events(limit=10)] == [1, 2]


@pytest.mark.mongo
async def test_an_order_deleted_then_acknowledged_leaves_no_document(
    mongo_store: MongoOrderStore, mongo_db: AsyncDatabase[Document]
) -> None:
    order = await placed_order(mongo_store)
    await mongo_store.transition(
        order.id,
        Transition(
            step_from=None, step_to=Step.RELEASE, status_from=PLACED, event=E.ORDER_EVENT_TYPE_DELETED
        ),
        at=T0,
    )
    assert await mongo_store.delete(order.id, step=Step.RELEASE)
    assert await mongo_db["order_events"].count_documents({}) == 1

    await mongo_store.ack_events(order.id, 1)
    assert await mongo_db["order_events"].count_documents({}) == 1  # one event still to read
    await mongo_store.ack_events(order.id, 2)

    assert await mongo_db["orders"].count_documents({}) == 0
    assert await mongo_db["order_events"].count_documents({}) == 0


@pytest.mark.mongo
async def test_a_deletion_cut_short_reads_each_event_once_and_finishing_it_adds_no_copy(
    mongo_store: MongoOrderStore, mongo_db: AsyncDatabase[Document]
) -> None:
    order = await placed_order(mongo_store)
    await mongo_store.transition(
        order.id,
        Transition(
            step_from=None, step_to=Step.RELEASE, status_from=PLACED, event=E.ORDER_EVENT_TYPE_CANCELLED
        ),
        at=T0,
    )
    # A crash after the events were moved aside, before the order was deleted: both copies.
    stored = await mongo_db["orders"].find_one({"_id": order.id})
    assert stored is not None
    await mongo_db["order_events"].insert_one({"_id": order.id, "events": stored["events"]})

    assert [event.sequence for event in await mongo_store.read_events(limit=10)] == [1, 2]
    assert await mongo_store.delete(order.id, step=Step.RELEASE)  # recovery finishes it
    moved = await mongo_db["order_events"].find_one({"_id": order.id})
    assert moved is not None
    assert [event["sequence"] for event in moved["events"]] == [1, 2]


async def ack_first(store: MongoOrderStore, order_id: int) -> None:
    await store.ack_events(order_id, 1)  # the webhook service, through another replica


async def record_another(store: MongoOrderStore, order_id: int) -> None:
    change = Transition(step_from=Step.RELEASE, step_to=Step.RELEASE, event=E.ORDER_EVENT_TYPE_DELETED)
    assert await store.transition(order_id, change, at=T0) is not None


@pytest.mark.mongo
@pytest.mark.parametrize(
    ("interloper", "left"),
    [(ack_first, [2]), (record_another, [1, 2, 3])],
    ids=["an-ack-stays-done", "a-new-event-is-moved-too"],
)
async def test_a_change_of_the_events_between_the_move_and_the_delete_is_kept(
    mongo_store: MongoOrderStore,
    mongo_db: AsyncDatabase[Document],
    interloper: Callable[[MongoOrderStore, int], Awaitable[None]],
    left: list[int],
) -> None:
    order = await placed_order(mongo_store)
    await mongo_store.transition(
        order.id,
        Transition(
            step_from=None, step_to=Step.RELEASE, status_from=PLACED, event=E.ORDER_EVENT_TYPE_CANCELLED
        ),
        at=T0,
    )
    other_replica = MongoOrderStore(mongo_db)
    moving = mongo_store._deleted_events  # the step to cut in after
    cut_in: list[bool] = []

    class ChangedAfterTheMove:
        def __getattr__(self, name: str) -> Any:
            return getattr(moving, name)

        async def update_one(self, *args: Any, **kwargs: Any) -> Any:
            result = await moving.update_one(*args, **kwargs)
            if not cut_in:
                cut_in.append(True)
                await interloper(other_replica, order.id)
            return result

    mongo_store._deleted_events = ChangedAfterTheMove()  # type: ignore[assignment]

    assert await mongo_store.delete(order.id, step=Step.RELEASE)

    assert cut_in == [True]
    assert [event.sequence for event in await mongo_store.read_events(limit=10)] == left
    assert await mongo_db["orders"].count_documents({}) == 0
