"""Values and bounds the service enforces, with the messages clients see: the protos' field
rules (checked on every request by the server interceptor, with REQUEST_RULES' names) and what
validation.py adds."""

from __future__ import annotations

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore_common.errors import InvalidArgument
from petstore_order import validation

FIRST_SECOND = -62_135_596_800  # 0001-01-01T00:00:00Z
LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z
QUANTITY = "quantity: must be greater than or equal to 1 and less than or equal to 1000000"


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

    assert refusal_of_new(order) is None
    assert validation.new_order(order) == order


def test_the_earliest_ship_date_and_the_smallest_order_are_valid() -> None:
    order = an_order(id=1, ship_date=Timestamp(seconds=FIRST_SECOND))

    assert validation.new_order(order) == order


def test_an_unspecified_status_becomes_placed_on_a_copy() -> None:
    order = an_order(status=order_pb2.ORDER_STATUS_UNSPECIFIED)

    checked = validation.new_order(order)

    assert checked == an_order(status=order_pb2.ORDER_STATUS_PLACED)
    assert order.status == order_pb2.ORDER_STATUS_UNSPECIFIED


def refusal_of_new(order: order_pb2.Order) -> str | None:
    """What CreateOrder says of `order`: the interceptor's check, then the servicer's."""
    try:
        validation.REQUEST_RULES.check(order_service_pb2.CreateOrderRequest(order=order))
        validation.new_order(order)
    except InvalidArgument as exc:
        return exc.message
    return None


@pytest.mark.parametrize(
    ("order", "message"),
    [
        (an_order(id=0), "id: must be positive"),
        (an_order(id=-3), "id: must be positive"),
        (an_order(pet_id=0), "petId: must be positive"),
        (an_order(pet_id=-1), "petId: must be positive"),
        (an_order(quantity=-(2**31)), QUANTITY),  # 0 is absent: the default (test_defaults.py)
        (an_order(quantity=-5), QUANTITY),
        (an_order(quantity=1_000_001), QUANTITY),
        (an_order(quantity=2**31 - 1), QUANTITY),
        (an_order(status=4), "status: must be one of placed, approved, delivered"),
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
    assert refusal_of_new(order) == message


def refusal(request: object) -> str | None:
    try:
        validation.REQUEST_RULES.check(request)
    except InvalidArgument as exc:
        return exc.message
    return None


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (order_service_pb2.GetOrderRequest(id=0), "id: must be positive"),
        (order_service_pb2.DeleteOrderRequest(id=-1), "id: must be positive"),
        (
            order_service_pb2.UpdateOrderStatusRequest(id=0, status=order_pb2.ORDER_STATUS_APPROVED),
            "id: must be positive",
        ),
        (
            order_service_pb2.UpdateOrderStatusRequest(id=1),
            "status: must be one of placed, approved, delivered",
        ),
        (
            order_service_pb2.UpdateOrderStatusRequest(id=1, status=9),  # type: ignore[arg-type]
            "status: must be one of placed, approved, delivered",
        ),
        (
            order_service_pb2.ListOrdersRequest(statuses=[order_pb2.ORDER_STATUS_UNSPECIFIED]),
            "status[0]: must be one of placed, approved, delivered",
        ),
        (order_service_pb2.ListOrdersRequest(pet_id=0), "petId: must be positive"),
        (order_service_pb2.ListOrdersRequest(owner_user_id=-1), "ownerUserId: must be positive"),
    ],
)
def test_invalid_requests_are_rejected(request_: object, message: str) -> None:
    assert refusal(request_) == message


def test_requests_at_their_bounds_are_valid() -> None:
    statuses = [
        order_pb2.ORDER_STATUS_PLACED,
        order_pb2.ORDER_STATUS_APPROVED,
        order_pb2.ORDER_STATUS_DELIVERED,
    ]
    assert refusal(order_service_pb2.ListOrdersRequest(statuses=statuses, pet_id=1, owner_user_id=1)) is None
    assert refusal(order_service_pb2.ListOrdersRequest()) is None  # every filter is optional
    assert (
        refusal(order_service_pb2.UpdateOrderStatusRequest(id=1, status=order_pb2.ORDER_STATUS_DELIVERED))
        is None
    )
