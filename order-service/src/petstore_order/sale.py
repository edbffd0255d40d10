"""An order's sale: a pet is sold once, across the order and pet services' two databases.

No transaction spans the two databases, so the sale is a saga the order service drives. Each
step is recorded on the order (its `Step`, one single-document write) before it is taken with
the pet service, and cleared after; each pet step is keyed by the order's id and takes effect
once however often it is asked (petstore_pet.holds):

- place: store the order hidden at RESERVE, ReservePet, then clear the step (the order is
  placed and holds its pet). A pet that is absent (404) or not available (409) withdraws the
  order at once: nothing was reserved.
- cancel (delete a placed or approved order): RELEASE hides the order, ReleasePet, delete.
- deliver: the order moves to delivered at SELL, SellPet, then the step is cleared.
- approve: no pet step (the pet stays pending).
- delete (an order holding no pet, or delivered): hidden at RELEASE with its event, then deleted;
  no pet step (recovery, finding one left hidden, asks ReleasePet, which changes nothing then).

Every change a client could see records its event in the same write (storage.events): PLACED
when the order becomes visible, APPROVED and DELIVERED with the move, CANCELLED when a placed or
approved order holding its pet is hidden to be cancelled, DELETED when any other order is hidden
to be deleted. An order withdrawn before it was placed (its pet refused, or recovery) was never
visible: it records nothing.

When a step's outcome is unknown (the pet service down or slow, a crash), the step stays
recorded. A retry with the same Idempotency-Key resumes a placing order where it stopped, and
`recover` finishes or undoes every step older than `recover_after`: a placing order that nobody
completed is withdrawn (its pet released, were it reserved); a release or a sale is taken
again. A withdrawn order is kept hidden for one more `recover_after`, releasing again before it
is deleted, so a reservation still on its way when it was withdrawn cannot keep the pet.

Once recovery has run past every step (`recover_after` plus one `interval`), these hold:
at most one placed or approved order per pet; a pet an order holds is pending exactly while
that order is placed or approved, and sold once it is delivered (tests/sale_invariants.py
checks both databases against them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from prometheus_client import Counter

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common.errors import AlreadyExists, FailedPrecondition, NotFound, Unavailable
from petstore_common.idempotency import Reservation, create_under_reserved_id
from petstore_order.pets import PetDirectory, StepUnsupported
from petstore_order.storage.base import OrderStore, Status, Step, StoredOrder, Transition
from petstore_order.storage.events import (
    DELETED_EVENTS_PURGE_INTERVAL,
    DELETED_EVENTS_RETENTION,
    event_type_of_move,
)

log = logging.getLogger(__name__)

DELIVERED = order_pb2.ORDER_STATUS_DELIVERED
PLACED = order_pb2.ORDER_STATUS_PLACED
PLACED_EVENT = order_service_pb2.ORDER_EVENT_TYPE_PLACED
CANCELLED_EVENT = order_service_pb2.ORDER_EVENT_TYPE_CANCELLED
DELETED_EVENT = order_service_pb2.ORDER_EVENT_TYPE_DELETED
DEFAULT_RECOVER_AFTER_SECONDS = 10.0
"""A step this old belongs to no live request (the order service's own calls time out sooner)."""
DEFAULT_RECOVERY_INTERVAL_SECONDS = 5.0
RECOVERY_BATCH = 100
"""Unfinished sales taken in one pass (oldest first); the next pass takes the rest."""
WITHDRAWN = "an earlier attempt of this order is being withdrawn; retry"

UNRESERVED_ORDERS = Counter(
    "petstore_order_unreserved_orders_total",
    "Orders placed without reserving their pet, because the pet service has no ReservePet "
    "(an earlier release): such a pet can be ordered more than once.",
)
RECOVERED_STEPS = Counter(
    "petstore_order_sale_steps_recovered_total",
    "Attempts by recovery at steps of sales left unfinished (a crash, an outage); one step is "
    "attempted again each pass while the pet service cannot be reached.",
    ["step"],
)
PURGED_EVENTS = Counter(
    "petstore_order_deleted_events_purged_total",
    "Deleted orders whose events were purged unacknowledged after DELETED_EVENTS_RETENTION (7 "
    "days): no webhook service read them.",
)
FAILED_SALES = Counter(
    "petstore_order_failed_sales_total",
    "Delivered orders whose pet the pet service refused to sell (it no longer held the pet).",
)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Sale:
    """The saga's steps over an order store and the pet service."""

    def __init__(
        self,
        store: OrderStore,
        pets: PetDirectory,
        *,
        reserve_pets: bool = True,
        recover_after_seconds: float = DEFAULT_RECOVER_AFTER_SECONDS,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._store = store
        self._pets = pets
        self._reserve_pets = reserve_pets
        self._recover_after = timedelta(seconds=recover_after_seconds)
        self._clock = clock
        self._said_unsupported = False
        self._purged_at: datetime | None = None

    async def place(
        self, reservation: Reservation, order: order_pb2.Order, *, budget_seconds: float | None
    ) -> order_pb2.Order:
        """Store the order and reserve its pet: NotFound when the pet is absent, AlreadyExists
        (naming the pet's state) when it is not available; no order is stored then."""
        if not self._reserve_pets:
            return await self._place_unreserved(reservation, order, budget_seconds)
        hidden = _HiddenUntilPlaced(self._store, self._clock())
        created = await create_under_reserved_id(reservation, hidden, order)
        if hidden.found is not None:  # an earlier attempt of this request stored it
            if hidden.found.step == Step.RELEASE:
                raise Unavailable(WITHDRAWN)
            if hidden.found.step != Step.RESERVE:
                return created  # it was placed: this is its answer
        return await self._reserve_then_place(created, budget_seconds)

    async def _reserve_then_place(
        self, order: order_pb2.Order, budget_seconds: float | None
    ) -> order_pb2.Order:
        try:
            await self._pets.reserve(order.pet_id, order.id, budget_seconds=budget_seconds)
        except StepUnsupported:
            return await self._place_without_step(order, budget_seconds)
        except NotFound:
            await self._store.delete(order.id, step=Step.RESERVE)  # nothing was reserved
            raise NotFound(pet_not_found(order.pet_id)) from None
        except FailedPrecondition as refusal:
            await self._store.delete(order.id, step=Step.RESERVE)
            # ALREADY_EXISTS, not FAILED_PRECONDITION, which is the answer to a reused key.
            raise AlreadyExists(refusal.message) from None
        # (Unavailable or cancelled: the step stays recorded, for a retry to resume or for
        # recovery to undo.) Staff may place an order already delivered: its pet is sold at once.
        selling = order.status == DELIVERED
        placed = await self._store.transition(
            order.id,
            Transition(
                step_from=Step.RESERVE,
                step_to=Step.SELL if selling else None,
                holds_pet=True,
                event=PLACED_EVENT,
            ),
            at=self._clock(),
        )
        if placed is not None:
            if selling:
                await self._sell(placed)
            return placed.order
        current = await self._store.get_stored(order.id)
        if current.step is None or current.step == Step.SELL:
            return current.order  # a twin attempt placed it
        # Recovery withdrew it while the pet was being reserved: give the pet back now.
        await self._release(current, delete=False)
        raise Unavailable(WITHDRAWN)

    async def _place_without_step(
        self, order: order_pb2.Order, budget_seconds: float | None
    ) -> order_pb2.Order:
        """A pet service of an earlier release cannot reserve: the order is placed as before
        the rule, once its pet is known to exist."""
        if not self._said_unsupported:
            log.warning("the pet service cannot reserve pets (an earlier release): orders are placed without")
            self._said_unsupported = True
        if not await self._pets.exists(order.pet_id, budget_seconds=budget_seconds):
            await self._store.delete(order.id, step=Step.RESERVE)
            raise NotFound(pet_not_found(order.pet_id))
        placed = await self._store.transition(
            order.id, Transition(step_from=Step.RESERVE, step_to=None, event=PLACED_EVENT), at=self._clock()
        )
        if placed is None:
            raise Unavailable(WITHDRAWN)
        UNRESERVED_ORDERS.inc()
        return placed.order

    async def _place_unreserved(
        self, reservation: Reservation, order: order_pb2.Order, budget_seconds: float | None
    ) -> order_pb2.Order:
        """The classic rule (ORDER_RESERVES_PET=false): every order stands alone."""
        if not await self._pets.exists(order.pet_id, budget_seconds=budget_seconds):
            raise NotFound(pet_not_found(order.pet_id))
        return await create_under_reserved_id(
            reservation, _PlacedWhenStored(self._store, self._clock()), order
        )

    async def cancel(self, stored: StoredOrder) -> bool:
        """Delete a settled order, releasing its pet when it holds one and is not delivered;
        False (nothing changed) when the order moved on since it was read."""
        order = stored.order
        if stored.step is not None:
            return False
        # Hidden first, with its event, in one write: the event and the disappearance go
        # together; the hidden order's events are then moved aside as it is deleted.
        releasing = stored.holds_pet and order.status != DELIVERED  # a sold pet stays sold
        withdrawn = await self._store.transition(
            order.id,
            Transition(
                step_from=None,
                step_to=Step.RELEASE,
                status_from=order.status,
                event=CANCELLED_EVENT if releasing else DELETED_EVENT,
            ),
            at=self._clock(),
        )
        if withdrawn is None:
            return False
        if releasing:
            await self._release(withdrawn, delete=True)
        else:
            await self._store.delete(order.id, step=Step.RELEASE)
        return True

    async def move(self, stored: StoredOrder, status: Status) -> order_pb2.Order | None:
        """Move a settled order to `status` (delivered sells its pet); None when it moved on."""
        order = stored.order
        selling = status == DELIVERED and stored.holds_pet
        moving = status != (order.status or PLACED)  # an order stored without a status is placed
        moved = await self._store.transition(
            order.id,
            Transition(
                step_from=None,
                step_to=Step.SELL if selling else None,
                status_from=order.status,
                status_to=status,
                complete=order.complete or status == DELIVERED,
                event=event_type_of_move(status) if moving else None,
            ),
            at=self._clock(),
        )
        if moved is not None and selling:
            await self._sell(moved)
        return None if moved is None else moved.order

    async def recover(self) -> int:
        """One pass over the sales left unfinished: finish or undo each; how many were taken."""
        now = self._clock()
        due = await self._store.unsettled(recorded_before=now - self._recover_after, limit=RECOVERY_BATCH)
        for stored in due:
            log.info(
                "finishing an unfinished sale",
                extra={"order_id": stored.order.id, "pet_id": stored.order.pet_id, "step": str(stored.step)},
            )
            RECOVERED_STEPS.labels(step=str(stored.step)).inc()
            if stored.step == Step.RESERVE:  # nobody completed it: withdraw it
                withdrawn = await self._store.transition(
                    stored.order.id, Transition(step_from=Step.RESERVE, step_to=Step.RELEASE), at=now
                )
                if withdrawn is not None:
                    await self._release(withdrawn, delete=False)
            elif stored.step == Step.RELEASE:
                await self._release(stored, delete=True)
            elif stored.step == Step.SELL:
                await self._sell(stored)
        return len(due)

    async def purge_deleted_events(self) -> int:
        """Forget deleted orders' events older than DELETED_EVENTS_RETENTION, at most once a
        DELETED_EVENTS_PURGE_INTERVAL; how many orders' events went."""
        now = self._clock()
        if self._purged_at is not None and now - self._purged_at < DELETED_EVENTS_PURGE_INTERVAL:
            return 0
        self._purged_at = now
        purged = await self._store.purge_deleted_events(older_than=DELETED_EVENTS_RETENTION)
        if purged:
            PURGED_EVENTS.inc(purged)
            log.warning("deleted orders' events purged unread", extra={"orders": purged})
        return purged

    async def recover_forever(self, interval_seconds: float) -> None:
        """`recover` (and the purge of old deleted orders' events) at once and then every
        `interval_seconds`, whatever a pass meets."""
        while True:
            try:
                await self.recover()
                await self.purge_deleted_events()
            except Exception as exc:  # the database or the pet service is away: next pass
                log.warning("sale recovery pass failed", extra={"error": type(exc).__name__})
            await asyncio.sleep(interval_seconds)

    async def _release(self, stored: StoredOrder, *, delete: bool) -> None:
        """Give the order's pet back; then, with `delete`, remove the withdrawn order. When the
        pet service cannot be asked, recovery does both later."""
        order = stored.order
        try:
            await self._pets.release(order.pet_id, order.id)
        except (Unavailable, StepUnsupported):
            log.warning(
                "pet not released yet: recovery will", extra={"order_id": order.id, "pet_id": order.pet_id}
            )
            return
        if delete:
            await self._store.delete(order.id, step=Step.RELEASE)

    async def _sell(self, stored: StoredOrder) -> None:
        order = stored.order
        try:
            await self._pets.sell(order.pet_id, order.id)
        except (Unavailable, StepUnsupported):
            log.warning(
                "pet not sold yet: recovery will", extra={"order_id": order.id, "pet_id": order.pet_id}
            )
            return
        except (NotFound, FailedPrecondition) as exc:  # the pet is gone: the order stays delivered
            FAILED_SALES.inc()
            log.error(
                "pet could not be sold",
                extra={"order_id": order.id, "pet_id": order.pet_id, "error": exc.message},
            )
        await self._store.transition(
            order.id, Transition(step_from=Step.SELL, step_to=None), at=self._clock()
        )


def pet_not_found(pet_id: int) -> str:
    return f"pet {pet_id} not found"


class _HiddenUntilPlaced:
    """The store as create_under_reserved_id sees it: a new order is stored at RESERVE, and an
    order an earlier attempt stored is read with the state of its sale (`found`)."""

    def __init__(self, store: OrderStore, at: datetime) -> None:
        self._store = store
        self._at = at
        self.found: StoredOrder | None = None

    async def new_id(self) -> int:
        return await self._store.new_id()

    async def create(self, order: order_pb2.Order) -> order_pb2.Order:
        return await self._store.create(order, step=Step.RESERVE, at=self._at)

    async def get(self, order_id: int) -> order_pb2.Order:
        self.found = await self._store.get_stored(order_id)
        return self.found.order


class _PlacedWhenStored:
    """The store as create_under_reserved_id sees it for an order placed at once (the classic
    rule): it is visible when stored, so its PLACED event is in the insert."""

    def __init__(self, store: OrderStore, at: datetime) -> None:
        self._store = store
        self._at = at

    async def new_id(self) -> int:
        return await self._store.new_id()

    async def create(self, order: order_pb2.Order) -> order_pb2.Order:
        return await self._store.create(order, at=self._at, event=PLACED_EVENT)

    async def get(self, order_id: int) -> order_pb2.Order:
        return await self._store.get(order_id)
