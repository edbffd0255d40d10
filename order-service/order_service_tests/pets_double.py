"""A pet service double for the order service's sale tests: pets by id with their holds, as
ReservePet, ReleasePet and SellPet describe them, behind the order service's PetDirectory. It
can fail or delay each step. test_pet_directory_contract.py holds it to the real pet service
(a process of its own, asked over gRPC), so it cannot drift from what it stands in for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from petstore_common.errors import FailedPrecondition, NotFound, Unavailable
from petstore_order.pets import StepUnsupported

AVAILABLE, PENDING, SOLD = "available", "pending", "sold"


@dataclass
class Pet:
    status: str = AVAILABLE
    holder: int | None = None


@dataclass
class PetsDouble:
    """Pets by id with their holds, as ReservePet, ReleasePet and SellPet describe them.
    `down` makes every call Unavailable; `unsupported` answers as an earlier release would."""

    pets: dict[int, Pet] = field(default_factory=dict)
    down: bool = False
    unsupported: bool = False
    late: list[tuple[int, int]] = field(default_factory=list)
    """Reservations that time out for the caller but land later (`land_late`)."""
    swallow_next_reserve: bool = False

    def _call(self) -> None:
        if self.down:
            raise Unavailable("the pet service is unavailable")
        if self.unsupported:
            raise StepUnsupported()

    async def exists(self, pet_id: int, *, budget_seconds: float | None = None) -> bool:
        if self.down:
            raise Unavailable("the pet service is unavailable")
        return pet_id in self.pets

    async def reserve(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        self._call()
        if self.swallow_next_reserve:  # taken by the pet service, but the answer is lost
            self.swallow_next_reserve = False
            self.late.append((pet_id, order_id))
            raise Unavailable("the pet service is unavailable")
        self._reserve(pet_id, order_id)

    def _reserve(self, pet_id: int, order_id: int) -> None:
        pet = self.pets.get(pet_id)
        if pet is None:
            raise NotFound(f"pet {pet_id} not found")
        if pet.holder == order_id:
            return
        if pet.holder is not None or pet.status != AVAILABLE:
            raise FailedPrecondition(f"pet {pet_id} is {pet.status}: only an available pet can be ordered")
        pet.status, pet.holder = PENDING, order_id

    def land_late(self) -> None:
        for pet_id, order_id in self.late:
            self._reserve(pet_id, order_id)
        self.late.clear()

    async def release(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        self._call()
        pet = self.pets.get(pet_id)
        if pet is not None and pet.holder == order_id and pet.status == PENDING:
            pet.status, pet.holder = AVAILABLE, None

    async def sell(self, pet_id: int, order_id: int, *, budget_seconds: float | None = None) -> None:
        self._call()
        pet = self.pets.get(pet_id)
        if pet is None:
            raise NotFound(f"pet {pet_id} not found")
        if pet.holder != order_id:
            raise FailedPrecondition(f"pet {pet_id} is not held by order {order_id}")
        pet.status = SOLD
