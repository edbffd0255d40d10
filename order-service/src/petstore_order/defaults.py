"""A new order's defaults, as the contract declares them: each Order field that has one carries
it as its `(petstore.order.v1.default_value)` option (protos/petstore/order/v1/order.proto), and
the service gives it to a field the order leaves out. The proto is the one source: the gateway
reads the same option where it still fills a default for an older order service.

Absent is the field's zero for a field without presence (quantity 0, status unspecified), and
unset for one with presence. What a field may hold stays the field rules' business: a default
is only what an absent field means.
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from petstore.order.v1 import order_pb2
from petstore_order.storage.base import Status


def _default_of(field_name: str) -> order_pb2.FieldDefault:
    return _declared_default(order_pb2.Order.DESCRIPTOR.fields_by_name[field_name])


def _declared_default(field: FieldDescriptor) -> order_pb2.FieldDefault:
    return field.GetOptions().Extensions[order_pb2.default_value]


DEFAULT_QUANTITY: int = _default_of("quantity").int32
"""How many of the pet an order without a quantity orders."""
DEFAULT_STATUS: Status = _default_of("status").status
"""The status of an order created or stored without one."""

_DEFAULTED = tuple(
    (field, _declared_default(field))
    for field in order_pb2.Order.DESCRIPTOR.fields
    if _declared_default(field).WhichOneof("value") is not None
)


def apply_defaults(order: order_pb2.Order) -> None:
    """Give every absent field of `order` that has a declared default that default (in place)."""
    message: Message = order  # HasField by a name read from the descriptor
    for field, default in _DEFAULTED:
        absent = not message.HasField(field.name) if field.has_presence else not getattr(order, field.name)
        if absent:
            kind = default.WhichOneof("value")
            assert kind is not None  # _DEFAULTED holds declared defaults only
            setattr(order, field.name, getattr(default, kind))
