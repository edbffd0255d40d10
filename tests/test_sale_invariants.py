"""The invariant checker finds each kind of broken sale (so a clean report means something)."""

from __future__ import annotations

import pytest

from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2
from petstore_order.storage.base import Step, StoredOrder
from tests.sale_invariants import PetState, Snapshot, violations

PENDING, SOLD, AVAILABLE = pet_pb2.PET_STATUS_PENDING, pet_pb2.PET_STATUS_SOLD, pet_pb2.PET_STATUS_AVAILABLE
PLACED, APPROVED = order_pb2.ORDER_STATUS_PLACED, order_pb2.ORDER_STATUS_APPROVED
DELIVERED = order_pb2.ORDER_STATUS_DELIVERED


def order(
    order_id: int, pet_id: int, status: int, *, step: Step | None = None, holds: bool = True
) -> StoredOrder:
    return StoredOrder(order_pb2.Order(id=order_id, pet_id=pet_id, status=status), step=step, holds_pet=holds)  # type: ignore[arg-type]


def shop(pets: list[PetState], orders: list[StoredOrder]) -> Snapshot:
    return Snapshot({pet.pet_id: pet for pet in pets}, {stored.order.id: stored for stored in orders})


def test_a_settled_shop_has_no_violations() -> None:
    state = shop(
        [
            PetState(1, PENDING, 10),
            PetState(2, SOLD, 11),
            PetState(3, AVAILABLE, None),
            PetState(4, SOLD, 99),
        ],
        [order(10, 1, APPROVED), order(11, 2, DELIVERED), order(12, 3, PLACED, holds=False)],
    )

    assert violations(state) == []  # pet 4's order was deleted after delivery: allowed


@pytest.mark.parametrize(
    ("pets", "orders", "expected"),
    [
        (
            [PetState(1, PENDING, 10)],
            [order(10, 1, PLACED, step=Step.RESERVE)],
            "order 10 still at step reserve",
        ),
        (
            [PetState(1, PENDING, 10)],
            [order(10, 1, PLACED), order(11, 1, PLACED, holds=False)],
            "pet 1 has 2 live orders",
        ),
        ([PetState(1, AVAILABLE, None)], [order(10, 1, PLACED)], "live order 10 holds pet 1"),
        ([PetState(1, PENDING, 10)], [], "pet 1 is pending for order 10, which is gone"),
        ([PetState(1, PENDING, 10)], [order(10, 1, DELIVERED)], "pet 1 is pending for order 10"),
        ([PetState(1, SOLD, 10)], [order(10, 1, APPROVED)], "pet 1 is sold to order 10"),
    ],
)
def test_each_broken_invariant_is_reported(
    pets: list[PetState], orders: list[StoredOrder], expected: str
) -> None:
    found = violations(shop(pets, orders))

    assert any(expected in violation for violation in found), found
