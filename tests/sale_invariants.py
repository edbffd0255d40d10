"""The invariants of "a pet is sold once", read from both services' databases at once.

The order service's sale (petstore_order.sale) keeps them once recovery has run past every
step; this is the one place they are written, for the race and fault tests to check:

1. every order is settled: no step of a sale is left recorded;
2. at most one live (placed or approved) order per pet;
3. a live order that holds its pet finds it pending and held by it;
4. a pending pet that an order holds is held by a live order;
5. a sold pet that an order holds is held by a delivered order (or by one deleted after
   delivery);
6. a delivered order that holds its pet finds it sold and held by it (unless staff deleted the
   pet after the sale, or changed its status, which ends the hold).

Both stores are read through their own storage protocols (the embedded ones of an in-process
stack, or the MongoDB ones over the services' databases), so the check is the same for both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2
from petstore_common.errors import NotFound
from petstore_order.storage.base import OrderStore, StoredOrder
from petstore_pet.storage.base import PetStore

LIVE = (order_pb2.ORDER_STATUS_PLACED, order_pb2.ORDER_STATUS_APPROVED, order_pb2.ORDER_STATUS_UNSPECIFIED)
DELIVERED = order_pb2.ORDER_STATUS_DELIVERED
PENDING = pet_pb2.PET_STATUS_PENDING
SOLD = pet_pb2.PET_STATUS_SOLD
EVERY_PET_STATUS = (pet_pb2.PET_STATUS_AVAILABLE, PENDING, SOLD)
PAGE = 1000


@dataclass(frozen=True)
class PetState:
    pet_id: int
    status: pet_pb2.PetStatus.ValueType
    holder: int | None


@dataclass(frozen=True)
class Snapshot:
    pets: dict[int, PetState]
    orders: dict[int, StoredOrder]


async def snapshot(pets: PetStore, orders: OrderStore, pet_ids: list[int]) -> Snapshot:
    """The pets named (every one the test made) and every order, with their sale state."""
    pet_states: dict[int, PetState] = {}
    for pet_id in pet_ids:
        try:
            pet = await pets.get(pet_id)
        except NotFound:  # deleted, which the checks allow for
            continue
        pet_states[pet_id] = PetState(pet_id, pet.status, await pets.holder(pet_id))
    stored: dict[int, StoredOrder] = {}
    after = 0
    while True:
        page = await orders.find(statuses=(), pet_id=None, owner_user_id=None, after_id=after, limit=PAGE)
        for order in page:
            stored[order.id] = await orders.get_stored(order.id)
        if len(page) < PAGE:
            break
        after = page[-1].id
    far = datetime.now(UTC) + timedelta(days=365)
    for unsettled in await orders.unsettled(recorded_before=far, limit=100_000):
        stored[unsettled.order.id] = unsettled
    return Snapshot(pet_states, stored)


def violations(state: Snapshot) -> list[str]:
    """Every broken invariant, in words; empty when all hold."""
    found: list[str] = []
    live_per_pet = Counter(
        stored.order.pet_id
        for stored in state.orders.values()
        if stored.order.status in LIVE and stored.step is None
    )
    for stored in state.orders.values():
        order = stored.order
        if stored.step is not None:
            found.append(f"order {order.id} still at step {stored.step}")
            continue
        pet = state.pets.get(order.pet_id)
        if not stored.holds_pet or pet is None:
            continue
        if order.status in LIVE and (pet.status, pet.holder) != (PENDING, order.id):
            found.append(f"live order {order.id} holds pet {pet.pet_id}, which is {_state(pet)}")
        if order.status == DELIVERED and pet.holder == order.id and pet.status != SOLD:
            found.append(f"delivered order {order.id} holds pet {pet.pet_id}, which is {_state(pet)}")
    found += [f"pet {pet_id} has {count} live orders" for pet_id, count in live_per_pet.items() if count > 1]
    for pet in state.pets.values():
        if pet.holder is None:
            continue
        holder = state.orders.get(pet.holder)
        if pet.status == PENDING and (
            holder is None or holder.order.status not in LIVE or holder.step is not None
        ):
            found.append(
                f"pet {pet.pet_id} is pending for order {pet.holder}, which is {_order_state(holder)}"
            )
        if pet.status == SOLD and holder is not None and holder.order.status != DELIVERED:
            found.append(f"pet {pet.pet_id} is sold to order {pet.holder}, which is {_order_state(holder)}")
    return found


def _state(pet: PetState) -> str:
    return f"{pet_pb2.PetStatus.Name(pet.status)} held by {pet.holder}"


def _order_state(stored: StoredOrder | None) -> str:
    if stored is None:
        return "gone"
    return f"{order_pb2.OrderStatus.Name(stored.order.status)} at step {stored.step}"
