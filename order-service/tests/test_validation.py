"""Values and bounds the service enforces, with the messages clients see."""

from __future__ import annotations

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2
from petstore_common.errors import InvalidArgument
from petstore_order import validation

FIRST_SECOND = -62_135_596_800  # 0001-01-01T00:00:00Z
LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z


def an_order(**fields: object) -> order_pb2.Order:
    order = order_pb2.Order(pet_id=1, quantity=1, status=order_pb2.ORDER_STATUS_PLACED)
    for name, value in fields.items():
        if isinstance(value, Timestamp):
            getattr(order, name).CopyFrom(value)
        else:
            setattr(order, name, value)
    return order


def test_an_order_at_every_bound_is_valid() -> None:
    order = order_pb2.Order(
        id=2**63 - 1,
        pet_id=2**63 - 1,
        quantity=1_000_000,
        ship_date=Timestamp(seconds=LAST_SECOND, nanos=999_999_999),
        status=order_pb2.ORDER_STATUS_DELIVERED,
        complete=True,
    )

    assert validation.new_order(order) == order


def test_the_earliest_ship_date_and_the_smallest_order_are_valid() -> None:
    order = an_order(id=1, ship_date=Timestamp(seconds=FIRST_SECOND))

    assert validation.new_order(order) == order


def test_an_unspecified_status_becomes_placed_on_a_copy() -> None:
    order = an_order(status=order_pb2.ORDER_STATUS_UNSPECIFIED)

    checked = validation.new_order(order)

    assert checked == an_order(status=order_pb2.ORDER_STATUS_PLACED)
    assert order.status == order_pb2.ORDER_STATUS_UNSPECIFIED


@pytest.mark.parametrize(
    ("order", "message"),
    [
        (an_order(id=0), "id must be positive"),
        (an_order(id=-3), "id must be positive"),
        (an_order(pet_id=0), "petId must be positive"),
        (an_order(pet_id=-1), "petId must be positive"),
        (an_order(quantity=0), "quantity must be at least 1"),
        (an_order(quantity=-5), "quantity must be at least 1"),
        (an_order(quantity=1_000_001), "quantity must be at most 1000000"),
        (an_order(quantity=2**31 - 1), "quantity must be at most 1000000"),
        (an_order(status=4), "status 4 is not a valid order status"),
        (
            an_order(ship_date=Timestamp(seconds=FIRST_SECOND - 1)),
            "shipDate must be a valid time between the years 1 and 9999",
        ),
        (
            an_order(ship_date=Timestamp(seconds=LAST_SECOND + 1)),
            "shipDate must be a valid time between the years 1 and 9999",
        ),
        (
            an_order(ship_date=Timestamp(seconds=0, nanos=-1)),
            "shipDate must be a valid time between the years 1 and 9999",
        ),
        (
            an_order(ship_date=Timestamp(seconds=0, nanos=1_000_000_000)),
            "shipDate must be a valid time between the years 1 and 9999",
        ),
    ],
)
def test_invalid_orders_are_rejected(order: order_pb2.Order, message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        validation.new_order(order)
    assert caught.value.message == message


@pytest.mark.parametrize(("value", "field"), [(0, "id"), (-1, "petId")])
def test_ids_must_be_positive(value: int, field: str) -> None:
    with pytest.raises(InvalidArgument, match=f"^{field} must be positive$"):
        validation.check_id(value, field)
    assert validation.check_id(1, field) == 1
