"""Order: wire <-> protobuf, and shipDate parsing and formatting."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2
from petstore_common.rules import enum_names, field_rules
from petstore_gateway.representations.fields import as_object, get_bool, get_int, get_str
from petstore_gateway.representations.shapes import Document, InvalidRepresentation, ListOf, Obj, Scalar

ORDER_SHAPE = Obj(
    {
        "id": Scalar.INT,
        "petId": Scalar.INT,
        "quantity": Scalar.INT,
        "shipDate": Scalar.STR,
        "status": Scalar.STR,
        "complete": Scalar.BOOL,
    }
)
ORDER = Document("Order", ORDER_SHAPE)
ORDERS = Document("orders", ListOf("Order", ORDER_SHAPE))

_STATUS_NAMES = enum_names(order_pb2.OrderStatus)
ORDER_STATUSES: Mapping[str, order_pb2.OrderStatus.ValueType] = {
    name: value for value, name in _STATUS_NAMES.items()
}
"""placed, approved, delivered: the OrderStatus values' names, as clients write them."""
MIN_QUANTITY = field_rules(order_pb2.Order, "quantity").int32.gte


def _declared_default(field_name: str) -> order_pb2.FieldDefault:
    """A new order's default for a field as order.proto declares it: the order service's own."""
    options = order_pb2.Order.DESCRIPTOR.fields_by_name[field_name].GetOptions()
    return options.Extensions[order_pb2.default_value]


DEFAULT_QUANTITY = _declared_default("quantity").int32
DEFAULT_STATUS = _declared_default("status").status
_MAX_DATE_LENGTH = 64
# What an ISO 8601 date-time is written with. datetime.fromisoformat alone lets through more
# (Python 3.11 reads "2024-01-01T00:00:00\x00Z" as midnight UTC).
_DATE_CHARACTERS = frozenset("0123456789-:.,+TtZzW ")


def order_from_wire(value: Any) -> order_pb2.Order:
    """Defaults as the contract says: quantity 1, status placed, complete false.

    The order service fills them itself, but its release 1.0.0 refuses an absent quantity, so
    until no order service older than 1.1.0 runs the gateway sends quantity and status filled
    in, read from the proto (deploy/k8s/README.md, compatibility rules). complete false is the
    field's zero: nothing to send."""
    data = as_object(value, "the order")
    order = order_pb2.Order(pet_id=get_int(data, "petId", required=True) or 0)
    order_id = get_int(data, "id")
    if order_id is not None:
        order.id = order_id
    quantity = get_int(data, "quantity", bits=32)
    # The body tells a 0 the client wrote from a quantity left out; proto3 does not (the service
    # reads 0 as absent), so the gateway refuses the 0 itself rather than let it mean the default.
    if quantity is not None and quantity < MIN_QUANTITY:
        raise InvalidRepresentation(f"quantity must be at least {MIN_QUANTITY}")
    order.quantity = DEFAULT_QUANTITY if quantity is None else quantity
    ship_date = get_str(data, "shipDate")
    if ship_date is not None:
        order.ship_date.CopyFrom(parse_ship_date(ship_date))
    status = get_str(data, "status")
    if status is None:
        order.status = DEFAULT_STATUS
    elif status in ORDER_STATUSES:
        order.status = ORDER_STATUSES[status]
    else:
        raise InvalidRepresentation(f"status must be one of {', '.join(ORDER_STATUSES)}")
    order.complete = bool(get_bool(data, "complete"))  # absent: False, the field's zero
    return order


def order_status_from_wire(value: Any) -> tuple[int | None, order_pb2.OrderStatus.ValueType]:
    """The id (when given) and the required status of an Order body that moves an order on;
    every other field is ignored."""
    data = as_object(value, "the order")
    status = get_str(data, "status")
    if status is None:
        raise InvalidRepresentation(f"status is required: one of {', '.join(ORDER_STATUSES)}")
    if status not in ORDER_STATUSES:
        raise InvalidRepresentation(f"status must be one of {', '.join(ORDER_STATUSES)}")
    return get_int(data, "id"), ORDER_STATUSES[status]


def parse_ship_date(text: str) -> Timestamp:
    """ISO 8601 with `Z` or an offset. A time without a zone is rejected rather than guessed."""
    problem = "shipDate must be an ISO 8601 date-time with Z or an offset, e.g. 2024-05-01T12:00:00Z"
    if len(text) > _MAX_DATE_LENGTH or not _DATE_CHARACTERS.issuperset(text):
        raise InvalidRepresentation(problem)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidRepresentation(problem) from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidRepresentation(problem)
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+01:00 falls before year 1 in UTC
        raise InvalidRepresentation(problem) from None
    timestamp = Timestamp()
    timestamp.FromDatetime(utc)
    return timestamp


def format_utc(timestamp: Timestamp) -> str:
    """YYYY-MM-DDTHH:MM:SS.mmmZ, always UTC."""
    moment = timestamp.ToDatetime(tzinfo=UTC)
    # Not strftime: glibc's %Y writes the year 487 as "487", which is no date-time.
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}Z"
    )


def parse_order_status(name: str) -> order_pb2.OrderStatus.ValueType:
    status = ORDER_STATUSES.get(name)
    if status is None:
        raise InvalidRepresentation(f"status must be one of {', '.join(ORDER_STATUSES)}")
    return status


def orders_to_wire(orders: Iterable[order_pb2.Order]) -> list[dict[str, Any]]:
    return [order_to_wire(order) for order in orders]


def order_to_wire(order: order_pb2.Order) -> dict[str, Any]:
    wire: dict[str, Any] = {}
    if order.HasField("id"):
        wire["id"] = order.id
    wire["petId"] = order.pet_id
    wire["quantity"] = order.quantity
    if order.HasField("ship_date"):
        wire["shipDate"] = format_utc(order.ship_date)
    if order.status in _STATUS_NAMES:
        wire["status"] = _STATUS_NAMES[order.status]
    wire["complete"] = order.complete
    return wire
