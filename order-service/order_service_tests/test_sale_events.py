"""The events the sale records (petstore_order.sale over the embedded store): each change a
client can see, exactly once, at the sale's clock; nothing for an order that was never visible."""

from __future__ import annotations

from datetime import timedelta

import pytest

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common.errors import AlreadyExists, NotFound, Unavailable
from petstore_common.idempotency import Reservation
from petstore_order.storage.documents import datetime_to_timestamp
from petstore_order.storage.events import DELETED_EVENTS_PURGE_INTERVAL, DELETED_EVENTS_RETENTION

from .pets_double import AVAILABLE, Pet
from .test_sale import APPROVED, DELIVERED, PLACED, Shop, a_shop

E = order_service_pb2


async def recorded(shop: Shop) -> list[tuple[int, int, int, int]]:
    """(order id, sequence, type, status of the order in the event) of every unread event."""
    return [
        (event.order.id, event.sequence, event.type, event.order.status)
        for event in await shop.store.read_events(limit=1000)
    ]


async def test_an_orders_whole_life_records_one_event_a_change_at_the_sales_clock() -> None:
    shop = a_shop(1)
    order = await shop.order(1)
    shop.clock.pass_(timedelta(seconds=1))
    await shop.sale.move(await shop.store.get_stored(order.id), APPROVED)
    shop.clock.pass_(timedelta(seconds=1))
    await shop.sale.move(await shop.store.get_stored(order.id), DELIVERED)
    shop.clock.pass_(timedelta(seconds=1))

    assert await shop.sale.cancel(await shop.store.get_stored(order.id))  # delivered: deleted

    with pytest.raises(NotFound):
        await shop.store.get_stored(order.id)
    assert await recorded(shop) == [
        (order.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED),
        (order.id, 2, E.ORDER_EVENT_TYPE_APPROVED, APPROVED),
        (order.id, 3, E.ORDER_EVENT_TYPE_DELIVERED, DELIVERED),
        (order.id, 4, E.ORDER_EVENT_TYPE_DELETED, DELIVERED),
    ]
    times = [event.time for event in await shop.store.read_events(limit=10)]
    assert times == [datetime_to_timestamp(shop.clock.now - timedelta(seconds=3 - i)) for i in range(4)]


async def test_cancelling_an_order_holding_its_pet_records_cancelled_with_the_order_as_it_was() -> None:
    shop = a_shop(1)
    order = await shop.order(1)

    assert await shop.sale.cancel(await shop.store.get_stored(order.id))

    events = await shop.store.read_events(limit=10)
    assert [event.type for event in events] == [E.ORDER_EVENT_TYPE_PLACED, E.ORDER_EVENT_TYPE_CANCELLED]
    assert events[1].order == order
    assert shop.pets.pets[1] == Pet(AVAILABLE, None)


async def test_a_cancel_finished_by_recovery_records_its_event_once() -> None:
    shop = a_shop(1)
    order = await shop.order(1)
    shop.pets.down = True
    assert await shop.sale.cancel(await shop.store.get_stored(order.id))
    shop.pets.down = False

    await shop.recover_later()

    with pytest.raises(NotFound):
        await shop.store.get_stored(order.id)
    assert [kind for _, _, kind, _ in await recorded(shop)] == [
        E.ORDER_EVENT_TYPE_PLACED,
        E.ORDER_EVENT_TYPE_CANCELLED,
    ]


async def test_deleting_an_order_that_holds_no_pet_records_deleted() -> None:
    shop = a_shop(1)
    shop.pets.unsupported = True  # an earlier pet service: the order is placed without its pet
    order = await shop.order(1)

    assert await shop.sale.cancel(await shop.store.get_stored(order.id))

    assert await recorded(shop) == [
        (order.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED),
        (order.id, 2, E.ORDER_EVENT_TYPE_DELETED, PLACED),
    ]


async def test_orders_refused_or_withdrawn_before_they_were_placed_record_nothing() -> None:
    shop = a_shop(1)
    first = await shop.order(1)
    with pytest.raises(AlreadyExists):
        await shop.order(1)  # the pet is pending
    with pytest.raises(NotFound):
        await shop.order(2)  # no such pet
    shop.pets.pets[3] = Pet()
    shop.pets.swallow_next_reserve = True
    with pytest.raises(Unavailable):
        await shop.order(3)
    await shop.recover_later()  # withdrawn
    await shop.recover_later()  # and deleted

    assert await recorded(shop) == [(first.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED)]


async def test_a_move_to_the_status_the_order_has_records_nothing() -> None:
    shop = a_shop(1)
    order = await shop.order(1)

    assert await shop.sale.move(await shop.store.get_stored(order.id), PLACED) is not None

    assert await recorded(shop) == [(order.id, 1, E.ORDER_EVENT_TYPE_PLACED, PLACED)]


@pytest.mark.parametrize("reserve_pets", [True, False], ids=["reserving", "classic"])
async def test_an_order_placed_delivered_by_staff_records_placed_only(reserve_pets: bool) -> None:
    shop = a_shop(1, reserve_pets=reserve_pets)
    delivered = order_pb2.Order(pet_id=1, quantity=1, status=DELIVERED, complete=True)

    placed = await shop.sale.place(Reservation(shop.store.idempotency, None), delivered, budget_seconds=1)

    [event] = await shop.store.read_events(limit=10)
    assert (event.type, event.sequence, event.order) == (E.ORDER_EVENT_TYPE_PLACED, 1, placed)


async def test_deleted_orders_events_are_purged_after_the_retention_at_most_once_an_interval() -> None:
    shop = a_shop(1)
    order = await shop.order(1)
    assert await shop.sale.cancel(await shop.store.get_stored(order.id))
    purges: list[timedelta] = []
    purge = shop.store.purge_deleted_events

    async def counted(*, older_than: timedelta) -> int:
        purges.append(older_than)
        return await purge(older_than=older_than)

    shop.store.purge_deleted_events = counted  # type: ignore[method-assign]

    assert await shop.sale.purge_deleted_events() == 0  # a week is not over
    shop.clock.pass_(DELETED_EVENTS_PURGE_INTERVAL / 2)
    await shop.sale.purge_deleted_events()
    shop.clock.pass_(DELETED_EVENTS_PURGE_INTERVAL)
    await shop.sale.purge_deleted_events()

    assert purges == [DELETED_EVENTS_RETENTION] * 2
    assert len(await recorded(shop)) == 2  # still waiting for a webhook service
