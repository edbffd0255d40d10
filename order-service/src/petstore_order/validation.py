"""The service is the authority on values and bounds: each check raises InvalidArgument.

Messages name fields as clients write them (petId, shipDate): the gateway shows them as they are.
"""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2
from petstore_common.errors import InvalidArgument
from petstore_order.storage.base import STATUS_NAMES

MIN_QUANTITY = 1
MAX_QUANTITY = 1_000_000
# Timestamp's own range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
MIN_TIMESTAMP_SECONDS = -62_135_596_800
MAX_TIMESTAMP_SECONDS = 253_402_300_799
_MAX_NANOS = 999_999_999


def check_id(value: int, field: str = "id") -> int:
    """Ids are 1..2^63-1; int64 already bounds the top."""
    if value <= 0:
        raise InvalidArgument(f"{field} must be positive")
    return value


def new_order(order: order_pb2.Order) -> order_pb2.Order:
    """A checked copy of an order to create, with the contract's default status (placed)."""
    if order.HasField("id"):
        check_id(order.id)
    check_id(order.pet_id, "petId")
    if order.quantity < MIN_QUANTITY:
        raise InvalidArgument(f"quantity must be at least {MIN_QUANTITY}")
    if order.quantity > MAX_QUANTITY:
        raise InvalidArgument(f"quantity must be at most {MAX_QUANTITY}")
    if order.HasField("ship_date"):
        check_ship_date(order.ship_date)
    checked = order_pb2.Order()
    checked.CopyFrom(order)
    if checked.status == order_pb2.ORDER_STATUS_UNSPECIFIED:
        checked.status = order_pb2.ORDER_STATUS_PLACED
    elif checked.status not in STATUS_NAMES:
        raise InvalidArgument(f"status {checked.status} is not a valid order status")
    return checked


def check_ship_date(timestamp: Timestamp) -> None:
    if not (
        MIN_TIMESTAMP_SECONDS <= timestamp.seconds <= MAX_TIMESTAMP_SECONDS
        and 0 <= timestamp.nanos <= _MAX_NANOS
    ):
        raise InvalidArgument("shipDate must be a valid time between the years 1 and 9999")
