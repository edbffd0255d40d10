"""Which order holds a pet, and what that allows: the pet side of "a pet is sold once".

An order for an available pet reserves it (the pet is pending, held by that order); delivering
the order sells it (sold, still held by that order, as a record of the sale); cancelling it
releases it (available, held by nobody). Only the holding order may sell or release a pet, so a
late or repeated step of one order never touches a pet another order took since. A pet without
a status counts as available: classic clients leave it out.

While an order holds a pending pet, its status is the order's: staff may edit the pet but not
change its status or delete it (ABORTED, naming the order; the order is cancelled or delivered
first). A sold pet is the staff's again: changing its status or deleting it ends the hold.

Each function decides one step from the stored status and holder: the embedded store applies
it as it is; the MongoDB store writes each step in one update whose filter is the step's
condition, and reads the pet only when that does not match, to say why.
"""

from __future__ import annotations

from petstore.pet.v1 import pet_pb2
from petstore_common.errors import Aborted, FailedPrecondition
from petstore_pet.storage.base import STATUS_NAMES, Status

AVAILABLE = pet_pb2.PET_STATUS_AVAILABLE
PENDING = pet_pb2.PET_STATUS_PENDING
SOLD = pet_pb2.PET_STATUS_SOLD
UNSPECIFIED = pet_pb2.PET_STATUS_UNSPECIFIED


RESERVABLE: tuple[Status, ...] = (UNSPECIFIED, AVAILABLE)
"""The statuses of a pet an order may reserve (when no order holds it)."""


def is_available(status: Status, holder: int | None) -> bool:
    """Whether an order may reserve the pet."""
    return holder is None and status in RESERVABLE


def reserve(pet_id: int, status: Status, holder: int | None, order_id: int) -> bool:
    """Whether to write the reservation (pending, held by `order_id`): False when that order
    holds the pet already; FailedPrecondition, naming the pet's state, when it is not available."""
    if holder == order_id:
        return False
    if is_available(status, holder):
        return True
    raise FailedPrecondition(
        f"pet {pet_id} is {STATUS_NAMES.get(status, 'unavailable')}: only an available pet can be ordered"
    )


def release(status: Status, holder: int | None, order_id: int) -> bool:
    """Whether to write the release (available, held by nobody): only a pending pet that
    `order_id` holds is released; anything else stays as it is."""
    return holder == order_id and status == PENDING


def sell(pet_id: int, status: Status, holder: int | None, order_id: int) -> bool:
    """Whether to write the sale (sold, still held by `order_id`): False when it is sold to that
    order already; FailedPrecondition when the order does not hold the pet."""
    if holder != order_id:
        raise FailedPrecondition(f"pet {pet_id} is not held by order {order_id}: it cannot be sold to it")
    return status != SOLD


def staff_write(pet_id: int, status: Status, holder: int | None, *, new_status: Status | None) -> bool:
    """Check a staff change of the pet (`new_status` None: a deletion; else the status the write
    leaves). Aborted while an order holds it pending and the change would move its status or
    remove it. Returns whether the write ends the hold (a sold pet's status changed or deleted)."""
    if holder is None:
        return False
    if status == PENDING:
        if new_status is None:
            raise Aborted(
                f"pet {pet_id} is held by order {holder}: cancel or deliver the order before deleting the pet"
            )
        if new_status != PENDING:
            raise Aborted(
                f"pet {pet_id} is held by order {holder}: its status follows the order until the order "
                "is delivered or cancelled"
            )
        return False
    return new_status is None or new_status != status
