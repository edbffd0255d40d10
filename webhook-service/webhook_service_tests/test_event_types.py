"""Event type names come from the owning services' enums: one source, nothing typed twice."""

from __future__ import annotations

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore_webhook.event_types import ORDER_EVENT_TYPES, PET_EVENT_TYPES, event_type_names, subject


def test_every_event_enum_value_but_unspecified_has_a_name() -> None:
    assert set(ORDER_EVENT_TYPES) == set(order_service_pb2.OrderEventType.values()) - {0}
    assert set(PET_EVENT_TYPES) == set(pet_service_pb2.PetEventType.values()) - {0}


def test_names_are_the_lower_cased_value_names_under_their_kind() -> None:
    assert ORDER_EVENT_TYPES[order_service_pb2.ORDER_EVENT_TYPE_PLACED] == "order.placed"
    assert PET_EVENT_TYPES[pet_service_pb2.PET_EVENT_TYPE_SOLD] == "pet.sold"
    assert event_type_names() == (
        "order.placed",
        "order.approved",
        "order.delivered",
        "order.cancelled",
        "order.deleted",
        "pet.reserved",
        "pet.sold",
        "pet.released",
    )


def test_a_subject_names_its_kind_and_id() -> None:
    assert subject("order", 12) == "order:12"
