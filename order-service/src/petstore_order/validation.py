"""The service is the authority on values and bounds: each check raises InvalidArgument.

The field rules (ids, quantity, statuses) are annotations in the protos, checked on every
request by the shared server interceptor before a servicer method runs; REQUEST_RULES tells it
the client's names for them. What is left here: the contract's defaults (petstore_order.defaults),
and a ship date that is a time at all (a Timestamp's nanos out of range is no time the rules can compare).

Messages name fields as clients write them (petId, shipDate): the gateway shows them as they are.
"""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.request_validation import RequestValidator
from petstore_order.defaults import apply_defaults

# Timestamp's own range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
MIN_TIMESTAMP_SECONDS = -62_135_596_800
MAX_TIMESTAMP_SECONDS = 253_402_300_799
_MAX_NANOS = 999_999_999

# The renames word the legacy message (for gateways before 1.1.0) only: the gateway names fields
# itself from the neutral violation (petstore_common.request_validation).
REQUEST_RULES = RequestValidator(field_names={"petstore.order.v1.ListOrdersRequest.statuses": "status"})


def new_order(order: order_pb2.Order) -> order_pb2.Order:
    """A checked copy of an order to create, its absent fields given the contract's defaults
    (quantity 1, status placed)."""
    if order.HasField("ship_date"):
        check_ship_date(order.ship_date)
    checked = order_pb2.Order()
    checked.CopyFrom(order)
    apply_defaults(checked)
    return checked


def check_ship_date(timestamp: Timestamp) -> None:
    if not (
        MIN_TIMESTAMP_SECONDS <= timestamp.seconds <= MAX_TIMESTAMP_SECONDS
        and 0 <= timestamp.nanos <= _MAX_NANOS
    ):
        raise InvalidArgument("shipDate must be a valid time between the years 1 and 9999")
