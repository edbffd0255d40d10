"""The sale's saga (petstore_order.sale) over the embedded order store and a pet service double
that keeps holds as the PetService contract describes them, and can fail or delay each step."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import REGISTRY

from petstore.auth.v1 import caller_pb2
from petstore.order.v1 import order_pb2
from petstore_common.errors import AlreadyExists, NotFound, Unavailable
from petstore_common.idempotency import Idempotency, MemoryIdempotencyStore, Reservation
from petstore_order.sale import Sale
from petstore_order.storage.base import Step
from petstore_order.storage.memory import MemoryOrderStore

from .pets_double import AVAILABLE, PENDING, SOLD, Pet, PetsDouble

PLACED = order_pb2.ORDER_STATUS_PLACED
APPROVED = order_pb2.ORDER_STATUS_APPROVED
DELIVERED = order_pb2.ORDER_STATUS_DELIVERED
RECOVER_AFTER = timedelta(seconds=10)


@dataclass
class Clock:
    now: datetime = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def pass_(self, delta: timedelta) -> None:
        self.now += delta


@dataclass
class Shop:
    store: MemoryOrderStore
    pets: PetsDouble
    clock: Clock
    sale: Sale

    async def order(self, pet_id: int, reservation: Reservation | None = None) -> order_pb2.Order:
        order = order_pb2.Order(pet_id=pet_id, quantity=1, status=PLACED)
        return await self.sale.place(
            reservation or Reservation(self.store.idempotency, None), order, budget_seconds=1
        )

    async def recover_later(self) -> int:
        """Recovery after every step recorded so far is due."""
        self.clock.pass_(RECOVER_AFTER + timedelta(seconds=1))
        return await self.sale.recover()


async def every_order(shop: Shop) -> list[order_pb2.Order]:
    return await shop.store.find(statuses=(), pet_id=None, owner_user_id=None, after_id=0, limit=100)


def a_shop(*pet_ids: int, reserve_pets: bool = True) -> Shop:
    store, pets, clock = MemoryOrderStore(), PetsDouble({pet_id: Pet() for pet_id in pet_ids}), Clock()
    sale = Sale(
        store,
        pets,
        reserve_pets=reserve_pets,
        recover_after_seconds=RECOVER_AFTER.total_seconds(),
        clock=clock,
    )
    return Shop(store, pets, clock, sale)


async def test_an_order_reserves_its_pet_and_a_second_order_is_refused_naming_the_state() -> None:
    shop = a_shop(1)

    first = await shop.order(1)
    with pytest.raises(AlreadyExists, match="pet 1 is pending"):
        await shop.order(1)

    assert shop.pets.pets[1] == Pet(PENDING, first.id)
    assert [order.id for order in await every_order(shop)] == [first.id]  # the refused one is gone
    assert (await shop.store.get_stored(first.id)).holds_pet


async def test_an_unknown_pet_is_not_found_and_stores_nothing() -> None:
    shop = a_shop()

    with pytest.raises(NotFound, match="pet 9 not found"):
        await shop.order(9)

    assert await every_order(shop) == []
    assert await shop.store.unsettled(recorded_before=shop.clock.now + RECOVER_AFTER, limit=10) == []


async def test_cancelling_releases_the_pet_for_the_next_customer() -> None:
    shop = a_shop(1)
    first = await shop.order(1)

    assert await shop.sale.cancel(await shop.store.get_stored(first.id))
    second = await shop.order(1)

    assert shop.pets.pets[1] == Pet(PENDING, second.id)
    with pytest.raises(NotFound):
        await shop.store.get_stored(first.id)


async def test_approval_keeps_the_pet_pending_and_delivery_sells_it() -> None:
    shop = a_shop(1)
    order = await shop.order(1)

    approved = await shop.sale.move(await shop.store.get_stored(order.id), APPROVED)
    assert shop.pets.pets[1].status == PENDING
    delivered = await shop.sale.move(await shop.store.get_stored(order.id), DELIVERED)

    assert approved is not None
    assert delivered is not None
    assert (delivered.status, delivered.complete) == (DELIVERED, True)
    assert shop.pets.pets[1] == Pet(SOLD, order.id)
    assert (await shop.store.get_stored(order.id)).step is None
    # Deleting a delivered order keeps the sale: the pet stays sold.
    assert await shop.sale.cancel(await shop.store.get_stored(order.id))
    assert shop.pets.pets[1] == Pet(SOLD, order.id)


async def test_a_retry_under_the_same_key_resumes_a_placing_order_and_never_meets_its_own_hold() -> None:
    shop = a_shop(1)
    idempotency = Idempotency(MemoryIdempotencyStore(), clock=shop.clock)
    caller_key = "key-1"
    shop.pets.swallow_next_reserve = True  # the pet is reserved, but the answer is lost

    async def attempt() -> order_pb2.Order:
        async def run(reservation: Reservation) -> order_pb2.Order:
            return await shop.order(1, reservation)

        response, _ = await idempotency.run(
            key=caller_key,
            caller=caller_pb2.Caller(user_id=5),
            fingerprint="same",
            response_type=order_pb2.Order,
            execute=run,
        )
        return response

    with pytest.raises(Unavailable):
        await attempt()
    shop.pets.land_late()
    retried = await attempt()

    assert shop.pets.pets[1] == Pet(PENDING, retried.id)
    assert (await shop.store.get_stored(retried.id)).step is None
    assert await attempt() == retried  # and from now on the answer replays


async def test_recovery_withdraws_an_order_nobody_finished_and_frees_its_pet() -> None:
    shop = a_shop(1)
    shop.pets.swallow_next_reserve = True
    with pytest.raises(Unavailable):
        await shop.order(1)
    shop.pets.land_late()  # the reservation lands: the pet is held by a hidden order
    [placing] = await shop.store.unsettled(recorded_before=shop.clock.now + RECOVER_AFTER, limit=10)

    assert await shop.sale.recover() == 0  # not due yet: it may still belong to a live request
    assert await shop.recover_later() == 1

    assert shop.pets.pets[1] == Pet(AVAILABLE, None)
    assert (await shop.store.get_stored(placing.order.id)).step == Step.RELEASE  # withdrawn, kept a while
    assert await shop.recover_later() == 1
    with pytest.raises(NotFound):
        await shop.store.get_stored(placing.order.id)
    assert (await shop.order(1)).id != placing.order.id


async def test_a_reservation_landing_after_the_withdrawal_is_released_before_the_order_goes() -> None:
    shop = a_shop(1)
    shop.pets.swallow_next_reserve = True
    with pytest.raises(Unavailable):
        await shop.order(1)
    await shop.recover_later()  # withdrawn while the reservation is still on its way

    shop.pets.land_late()
    assert shop.pets.pets[1].status == PENDING
    await shop.recover_later()

    assert shop.pets.pets[1] == Pet(AVAILABLE, None)
    assert await shop.store.unsettled(recorded_before=shop.clock.now + RECOVER_AFTER, limit=10) == []


async def test_a_cancel_while_the_pet_service_is_down_is_finished_by_recovery() -> None:
    shop = a_shop(1)
    order = await shop.order(1)
    shop.pets.down = True

    assert await shop.sale.cancel(await shop.store.get_stored(order.id))  # the cancel is recorded
    with pytest.raises(NotFound):
        await shop.store.get(order.id)  # and the order is gone for its customer
    assert shop.pets.pets[1].status == PENDING
    await shop.recover_later()  # still down: nothing lost
    shop.pets.down = False
    await shop.recover_later()

    assert shop.pets.pets[1] == Pet(AVAILABLE, None)
    with pytest.raises(NotFound):
        await shop.store.get_stored(order.id)


async def test_a_delivery_while_the_pet_service_is_down_is_sold_by_recovery() -> None:
    shop = a_shop(1)
    order = await shop.order(1)
    await shop.sale.move(await shop.store.get_stored(order.id), APPROVED)
    shop.pets.down = True

    delivered = await shop.sale.move(await shop.store.get_stored(order.id), DELIVERED)
    assert delivered is not None
    assert delivered.status == DELIVERED
    assert (await shop.store.get_stored(order.id)).step == Step.SELL
    shop.pets.down = False
    await shop.recover_later()

    assert shop.pets.pets[1] == Pet(SOLD, order.id)
    assert (await shop.store.get_stored(order.id)).step is None


async def test_a_pet_service_without_the_steps_gets_orders_as_before_and_it_is_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    shop = a_shop(1)
    shop.pets.unsupported = True
    before = _unreserved()

    first, second = await shop.order(1), await shop.order(1)
    with pytest.raises(NotFound):
        await shop.order(2)

    assert first.id != second.id
    assert _unreserved() - before == 2
    assert sum("cannot reserve pets" in record.getMessage() for record in caplog.records) == 1
    assert not (await shop.store.get_stored(first.id)).holds_pet


def _unreserved() -> float:
    return REGISTRY.get_sample_value("petstore_order_unreserved_orders_total") or 0.0


async def test_the_classic_rule_places_every_order_alone() -> None:
    shop = a_shop(1, reserve_pets=False)

    first, second = await shop.order(1), await shop.order(1)

    assert first.id != second.id
    assert shop.pets.pets[1] == Pet(AVAILABLE, None)


async def test_racing_orders_for_one_pet_place_exactly_one() -> None:
    shop = a_shop(1)

    results = await asyncio.gather(*(shop.order(1) for _ in range(10)), return_exceptions=True)

    placed = [result for result in results if isinstance(result, order_pb2.Order)]
    assert len(placed) == 1
    assert all(
        isinstance(result, AlreadyExists) for result in results if not isinstance(result, order_pb2.Order)
    )
    assert shop.pets.pets[1] == Pet(PENDING, placed[0].id)


async def test_an_order_staff_place_delivered_sells_its_pet_at_once() -> None:
    shop = a_shop(1)
    delivered = order_pb2.Order(pet_id=1, quantity=1, status=DELIVERED, complete=True)

    placed = await shop.sale.place(Reservation(shop.store.idempotency, None), delivered, budget_seconds=1)

    assert placed.status == DELIVERED
    assert shop.pets.pets[1] == Pet(SOLD, placed.id)
    assert (await shop.store.get_stored(placed.id)).step is None
