"""Document shapes: ship dates are UTC datetimes in milliseconds, statuses are stored by name."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_pb2
from petstore_order.storage.documents import (
    datetime_to_timestamp,
    order_from_document,
    order_to_document,
    timestamp_to_datetime,
)


def test_a_full_order_becomes_a_full_document_and_back() -> None:
    order = order_pb2.Order(
        id=3,
        pet_id=9,
        quantity=2,
        ship_date=Timestamp(seconds=1_795_342_530, nanos=250_000_000),
        status=order_pb2.ORDER_STATUS_DELIVERED,
        complete=True,
    )

    document = order_to_document(order)

    assert document == {
        "_id": 3,
        "pet_id": 9,
        "quantity": 2,
        "ship_date": datetime(2026, 11, 22, 10, 15, 30, 250_000, tzinfo=UTC),
        "status": "delivered",
        "complete": True,
    }
    assert order_from_document(document) == order


def test_absent_fields_are_absent_keys() -> None:
    document = order_to_document(order_pb2.Order(pet_id=1, quantity=1))

    assert document == {"pet_id": 1, "quantity": 1, "complete": False}
    read = order_from_document({"_id": 4, **document})
    assert not read.HasField("ship_date")
    assert read.status == order_pb2.ORDER_STATUS_UNSPECIFIED


def test_ship_dates_are_truncated_to_milliseconds() -> None:
    moment = timestamp_to_datetime(Timestamp(seconds=-1, nanos=999_999_999))

    assert moment == datetime(1969, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
    assert datetime_to_timestamp(moment) == Timestamp(seconds=-1, nanos=999_000_000)


def test_the_whole_timestamp_range_converts() -> None:
    first, last = Timestamp(seconds=-62_135_596_800), Timestamp(seconds=253_402_300_799, nanos=999_000_000)

    assert timestamp_to_datetime(first) == datetime(1, 1, 1, tzinfo=UTC)
    assert timestamp_to_datetime(last) == datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
    assert datetime_to_timestamp(timestamp_to_datetime(first)) == first
    assert datetime_to_timestamp(timestamp_to_datetime(last)) == last


def test_a_naive_datetime_is_read_as_utc() -> None:
    # What PyMongo returns when the client is not tz_aware.
    assert datetime_to_timestamp(datetime(2026, 11, 22, 10, 15, 30, 5_000)) == Timestamp(
        seconds=1_795_342_530, nanos=5_000_000
    )
