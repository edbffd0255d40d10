"""The body a webhook carries and the headers that sign it."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone

import pytest
from standardwebhooks import Webhook
from standardwebhooks.exceptions import WebhookVerificationError

from petstore.order.v1 import order_pb2
from petstore_webhook.payloads import order_data, rfc3339, webhook_body
from petstore_webhook.signing import signed_headers
from petstore_webhook.storage.base import Event

SECRET = "whsec_" + base64.b64encode(b"k" * 24).decode()
WHEN = datetime(2026, 5, 1, 12, 30, 15, 123_456, tzinfo=UTC)


def placed_event() -> Event:
    order = order_pb2.Order(id=12, pet_id=3, quantity=1, status=order_pb2.ORDER_STATUS_PLACED)
    return Event(
        id="evt_1", type="order.placed", subject="order:12", sequence=1, time=WHEN, data=order_data(order)
    )


def test_the_body_is_compact_json_of_type_timestamp_and_data() -> None:
    body = webhook_body(placed_event())

    assert body == (
        b'{"type":"order.placed","timestamp":"2026-05-01T12:30:15.123Z",'
        b'"data":{"id":12,"petId":3,"quantity":1,"status":"placed","complete":false}}'
    )


def test_a_time_in_another_zone_is_written_in_utc() -> None:
    moment = WHEN.astimezone(timezone(timedelta(hours=-5)))
    assert rfc3339(moment) == "2026-05-01T12:30:15.123Z"


def test_the_headers_verify_with_the_endpoint_secret_only() -> None:
    body = webhook_body(placed_event())
    now = datetime.now(UTC)
    headers = signed_headers(secret=SECRET, message_id="evt_1", body=body, now=now)

    assert headers["webhook-id"] == "evt_1"
    assert headers["webhook-timestamp"] == str(int(now.timestamp()))
    assert headers["content-type"] == "application/json"
    assert Webhook(SECRET).verify(body, headers)["type"] == "order.placed"
    other = "whsec_" + base64.b64encode(b"x" * 24).decode()
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(body, headers)
    with pytest.raises(WebhookVerificationError):  # a body changed on the way
        Webhook(SECRET).verify(body.replace(b"placed", b"approved", 1), headers)
