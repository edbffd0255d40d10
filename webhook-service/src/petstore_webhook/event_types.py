"""The event type names endpoints subscribe to ("order.placed", "pet.sold"), derived from the
event enums of the services that own the events, so a type added there is known here too."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore_common.rules import enum_names

ORDER = "order"
PET = "pet"


def _typed(kind: str, names: Mapping[int, str]) -> Mapping[int, str]:
    """Enum value -> "<kind>.<its client-facing name>" (enum_names: UNSPECIFIED left out)."""
    return MappingProxyType({value: f"{kind}.{name}" for value, name in names.items()})


ORDER_EVENT_TYPES = _typed(ORDER, enum_names(order_service_pb2.OrderEventType.DESCRIPTOR))
"""OrderEventType value -> its name ("order.placed")."""
PET_EVENT_TYPES = _typed(PET, enum_names(pet_service_pb2.PetEventType.DESCRIPTOR))
"""PetEventType value -> its name ("pet.reserved")."""


def event_type_names() -> tuple[str, ...]:
    """Every known event type, orders' then pets', each in its enum's order."""
    return (*ORDER_EVENT_TYPES.values(), *PET_EVENT_TYPES.values())


def subject(kind: str, resource_id: int) -> str:
    """Whose event it is ("order:12"): a subject's deliveries keep their order."""
    return f"{kind}:{resource_id}"
