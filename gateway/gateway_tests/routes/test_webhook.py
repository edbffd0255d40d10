"""/v2/webhooks: staff manage webhook endpoints through the gateway, in front of a fake webhook
service (webhooks.py) that answers with the statuses its proto documents. The real webhook
service behind a real gateway is the e2e suite's (tests/e2e)."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore.webhook.v1 import webhook_service_pb2
from petstore_gateway.representations.webhook import EVENT_TYPES, MAX_EVENT_TYPES, URL_RULES
from petstore_gateway.routes.webhook import WEBHOOKS_STAFF_ONLY
from petstore_gateway.settings import GatewaySettings

from ..backend import Backend
from ..conftest import STATIC_KEY, Client, serve_gateway, unused_address
from ..test_raw_requests import error_message, send
from ..tokens import issue_token
from ..webhooks import MAX_ENDPOINTS, SECRET_PREFIX
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
WIRES = pytest.mark.parametrize("wire", list(Wire))
NEW = {"url": "https://hooks.example.com/petstore", "eventTypes": ["order.placed", "pet.sold"]}
WEBHOOK_METHODS = ("CreateEndpoint", "ListEndpoints", "DeleteEndpoint", "ListDeliveries")


def webhook_calls(backend: Backend) -> list[str]:
    """The methods of the webhook service any request reached."""
    return backend.calls.to("WebhookService")


def operations(endpoint_id: int) -> list[tuple[str, str, dict[str, Any]]]:
    """Each of the four operations, as (method, path, request), naming `endpoint_id`."""
    return [
        ("POST", "/v2/webhooks", {"json": NEW}),
        ("GET", "/v2/webhooks", {}),
        ("DELETE", f"/v2/webhooks/{endpoint_id}", {}),
        ("GET", f"/v2/webhooks/{endpoint_id}/deliveries", {}),
    ]


# ---------------------------------------------------------------------------------------
# The event types


def test_event_types_are_the_event_enums_values_by_subject() -> None:
    assert EVENT_TYPES == (
        "order.placed",
        "order.approved",
        "order.delivered",
        "order.cancelled",
        "order.deleted",
        "pet.reserved",
        "pet.sold",
        "pet.released",
    )
    counted = len(order_service_pb2.OrderEventType.values()) + len(pet_service_pb2.PetEventType.values())
    assert len(EVENT_TYPES) == counted - 2  # each enum's UNSPECIFIED left out


# ---------------------------------------------------------------------------------------
# Staff manage endpoints


@WIRES
async def test_staff_register_an_endpoint_and_see_its_secret_once(
    client: Client, backend: Backend, wire: Wire
) -> None:
    response = await client.post("/v2/webhooks", data=wire.body("Webhook", NEW), headers=wire.headers(**KEY))
    assert response.status == 200, await response.text()
    assert response.headers["Cache-Control"] == "no-store"  # the secret is in it
    created = await wire.read(response)
    assert created == {
        "id": created["id"],
        "url": NEW["url"],
        "eventTypes": NEW["eventTypes"],
        "state": "enabled",
        "createdAt": "2023-11-14T22:13:20.000Z",
        "secret": created["secret"],
    }
    assert created["secret"].startswith(SECRET_PREFIX)
    stored = backend.webhooks.endpoints[created["id"]]
    assert (stored.url, list(stored.event_types)) == (NEW["url"], NEW["eventTypes"])

    listed = await client.get("/v2/webhooks", headers={"Accept": wire.value, **KEY})
    assert listed.status == 200
    assert listed.headers["Cache-Control"] == "no-store"
    raw = await listed.read()
    assert created["secret"].encode() not in raw
    assert b"secret" not in raw
    assert await wire.read(listed) == [{key: value for key, value in created.items() if key != "secret"}]


async def test_the_list_is_in_id_order_and_shows_why_an_endpoint_is_disabled(
    client: Client, backend: Backend
) -> None:
    backend.webhooks.add("https://a.example.com/", ["pet.sold"])
    backend.webhooks.add(
        "https://b.example.com/", list(EVENT_TYPES[:2]), disabled_reason="HTTP 500 after 10 attempts"
    )
    response = await client.get("/v2/webhooks", headers=KEY)
    body = await response.json()
    assert [endpoint["id"] for endpoint in body] == [1, 2]
    assert "disabledReason" not in body[0]
    assert (body[1]["state"], body[1]["disabledReason"]) == ("disabled", "HTTP 500 after 10 attempts")


async def test_xml_lists_wrap_their_items(client: Client, backend: Backend) -> None:
    backend.webhooks.add("https://a.example.com/", ["pet.sold", "pet.released"])
    response = await client.get("/v2/webhooks", headers={"Accept": "application/xml", **KEY})
    text = await response.text()
    assert "<webhooks><Webhook><id>1</id><url>https://a.example.com/</url>" in text
    assert (
        "<eventTypes><eventType>pet.sold</eventType><eventType>pet.released</eventType></eventTypes>" in text
    )


@WIRES
async def test_staff_delete_an_endpoint_like_a_pet(client: Client, backend: Backend, wire: Wire) -> None:
    endpoint = backend.webhooks.add()
    headers = {"Accept": wire.value, **KEY}
    response = await client.delete(f"/v2/webhooks/{endpoint.id}", headers=headers)
    assert response.status == 200
    assert await wire.read(response) == {"code": 200, "type": "unknown", "message": str(endpoint.id)}
    assert endpoint.id not in backend.webhooks.endpoints
    again = await client.delete(f"/v2/webhooks/{endpoint.id}", headers=headers)
    assert await error_of(wire, again) == (404, f"webhook endpoint {endpoint.id} not found")


def _attempt(
    number: int, outcome: webhook_service_pb2.AttemptOutcome.ValueType, status: int, error: str = ""
) -> webhook_service_pb2.DeliveryAttempt:
    attempted_at = Timestamp()
    attempted_at.FromMilliseconds(1_700_000_000_000 + number * 1500)
    return webhook_service_pb2.DeliveryAttempt(
        message_id="evt_01hzzzzzzzzzzzzzzzzzzzzzzz",
        event_type="order.placed",
        attempt=number,
        attempted_at=attempted_at,
        outcome=outcome,
        response_status=status,
        error=error,
    )


@WIRES
async def test_deliveries_newest_first(client: Client, backend: Backend, wire: Wire) -> None:
    endpoint = backend.webhooks.add()
    backend.webhooks.attempted(
        endpoint.id, _attempt(1, webhook_service_pb2.ATTEMPT_OUTCOME_FAILED, 0, "timed out")
    )
    backend.webhooks.attempted(endpoint.id, _attempt(2, webhook_service_pb2.ATTEMPT_OUTCOME_DELIVERED, 204))
    response = await client.get(
        f"/v2/webhooks/{endpoint.id}/deliveries", headers={"Accept": wire.value, **KEY}
    )
    assert response.status == 200
    assert await wire.read(response) == [
        {
            "messageId": "evt_01hzzzzzzzzzzzzzzzzzzzzzzz",
            "eventType": "order.placed",
            "attempt": 2,
            "attemptedAt": "2023-11-14T22:13:23.000Z",
            "outcome": "delivered",
            "responseStatus": 204,
            "error": "",
        },
        {
            "messageId": "evt_01hzzzzzzzzzzzzzzzzzzzzzzz",
            "eventType": "order.placed",
            "attempt": 1,
            "attemptedAt": "2023-11-14T22:13:21.500Z",
            "outcome": "failed",
            "responseStatus": 0,
            "error": "timed out",
        },
    ]
    assert backend.webhooks.page_sizes == [0]  # no limit: the webhook service's own default


async def test_the_deliveries_limit_is_the_apis_limit_rule(client: Client, backend: Backend) -> None:
    endpoint = backend.webhooks.add()
    for number in range(1, 4):
        backend.webhooks.attempted(
            endpoint.id, _attempt(number, webhook_service_pb2.ATTEMPT_OUTCOME_FAILED, 500)
        )
    response = await client.get(f"/v2/webhooks/{endpoint.id}/deliveries?limit=2", headers=KEY)
    assert [attempt["attempt"] for attempt in await response.json()] == [3, 2]
    for bad in ("0", "-1", "1001", "abc", "1e3", " 1", "99999999999999999999"):
        response = await client.get(
            f"/v2/webhooks/{endpoint.id}/deliveries", params={"limit": bad}, headers=KEY
        )
        assert response.status == 400, bad
        assert "limit must be an integer from 1 to 1000" in (await response.json())["message"]
    assert backend.webhooks.page_sizes == [2]  # nothing refused reached the service
    await client.get(f"/v2/webhooks/{endpoint.id}/deliveries?limit=", headers=KEY)
    assert backend.webhooks.page_sizes == [2, 0]  # empty, as left out: the service's default


async def test_deliveries_of_an_absent_endpoint_are_404(client: Client, backend: Backend) -> None:
    response = await client.get("/v2/webhooks/7/deliveries", headers=KEY)
    assert await error_of(Wire.JSON, response) == (404, "webhook endpoint 7 not found")


@pytest.mark.parametrize("webhook_id", ["0", "-1", "abc", "1.5", "9223372036854775808", "%20"])
async def test_an_id_that_is_no_id_is_400_before_any_call(
    client: Client, backend: Backend, webhook_id: str
) -> None:
    for method, path in (("DELETE", ""), ("GET", "/deliveries")):
        response = await client.request(method, f"/v2/webhooks/{webhook_id}{path}", headers=KEY)
        status, message = await error_of(Wire.JSON, response)
        assert (status, message) == (400, "Invalid ID supplied: webhookId must be a positive 64-bit integer")
    assert webhook_calls(backend) == []


# ---------------------------------------------------------------------------------------
# Who may: staff only, refused before any body is read or any call made


@pytest.fixture
async def customer_token(backend: Backend) -> str:
    return await backend.customer("kit")


@pytest.mark.parametrize("index", range(4), ids=["create", "list", "delete", "deliveries"])
async def test_every_operation_refuses_anybody_but_staff(
    client: Client, backend: Backend, customer_token: str, index: int
) -> None:
    endpoint = backend.webhooks.add()  # an existing id: a customer who names it learns nothing
    method, path, request = operations(endpoint.id)[index]
    refused = [
        ({}, 401, "api_key header (or Authorization: Bearer) is required for this operation"),
        ({"api_key": "not-a-key"}, 401, "invalid api_key"),
        ({"api_key": STATIC_KEY + "x"}, 401, "invalid api_key"),
        ({"Authorization": "Bearer not-a-key"}, 401, "invalid api_key"),
        ({"api_key": issue_token(1, "kit", secret="another-secret-" + "x" * 32)[0]}, 401, "invalid api_key"),
        ({"api_key": customer_token}, 403, WEBHOOKS_STAFF_ONLY),
        ({"Authorization": f"Bearer {customer_token}"}, 403, WEBHOOKS_STAFF_ONLY),
    ]
    for headers, status, message in refused:
        response = await client.request(method, path, headers=headers, **request)
        assert await error_of(Wire.JSON, response) == (status, message), headers
        assert response.headers["Cache-Control"] == "no-store"
    assert webhook_calls(backend) == []
    assert list(backend.webhooks.endpoints) == [endpoint.id]  # still there, still the only one


async def test_a_customer_hammering_an_existing_endpoint_never_reaches_it(
    client: Client, backend: Backend, customer_token: str
) -> None:
    """Raw requests, concurrently, as a script would send them: deletes and reads of an endpoint
    that exists, and creates with a body, all refused before the body is read."""
    endpoint = backend.webhooks.add()
    body = json.dumps(NEW).encode()
    token = customer_token.encode()
    heads = [
        b"DELETE /v2/webhooks/%d HTTP/1.1\r\napi_key: %s\r\n" % (endpoint.id, token),
        b"GET /v2/webhooks/%d/deliveries HTTP/1.1\r\napi_key: %s\r\n" % (endpoint.id, token),
        b"GET /v2/webhooks HTTP/1.1\r\nAuthorization: Bearer %s\r\n" % token,
        b"POST /v2/webhooks HTTP/1.1\r\napi_key: %s\r\nContent-Type: application/json\r\n" % token,
    ]
    answers = await asyncio.gather(
        *(send(client, head, body if head.startswith(b"POST") else b"") for head in heads for _ in range(5))
    )
    for status, _, payload in answers:
        assert (status, error_message(status, payload)) == (403, WEBHOOKS_STAFF_ONLY)
    assert webhook_calls(backend) == []
    assert list(backend.webhooks.endpoints) == [endpoint.id]


# ---------------------------------------------------------------------------------------
# Bad input: a 4xx with the ApiResponse body, the webhook service's words reaching the client


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**NEW, "url": "http://hooks.example.com/"}, "url: must be https"),
        (
            {**NEW, "url": "https://127.0.0.1/hook"},
            "url: must not resolve to a private, loopback or link-local address",
        ),
        ({**NEW, "url": ""}, "url: must not be empty"),
        (
            {**NEW, "url": "https://h.example.com/" + "a" * URL_RULES.max_len},
            "url: must be at most 2048 characters",
        ),
        ({**NEW, "eventTypes": []}, "eventTypes: must not be empty"),
        ({**NEW, "eventTypes": ["order.lost"]}, "eventTypes[0]: must be one of " + ", ".join(EVENT_TYPES)),
        (
            {**NEW, "eventTypes": ["order.placed"] * (MAX_EVENT_TYPES + 1)},
            f"eventTypes: must have at most {MAX_EVENT_TYPES} entries",
        ),
        ({**NEW, "eventTypes": ["x" * 65]}, "eventTypes[0]: must be at most 64 characters"),
        ({"eventTypes": ["order.placed"]}, "url is required"),
        ({"url": NEW["url"]}, "eventTypes is required"),
        ({**NEW, "url": 5}, "url must be a string"),
        ({**NEW, "eventTypes": "order.placed"}, "eventTypes must be a list of strings"),
        ([NEW], "the webhook must be an object"),
    ],
)
async def test_a_refused_endpoint_is_400_naming_the_field(
    client: Client, backend: Backend, body: Any, message: str
) -> None:
    response = await client.post("/v2/webhooks", json=body, headers=KEY)
    status, said = await error_of(Wire.JSON, response)
    assert status == 400
    assert said.startswith(message), said
    assert backend.webhooks.endpoints == {}


async def test_an_xml_body_is_read_by_the_webhook_shape(client: Client, backend: Backend) -> None:
    xml = (
        b"<Webhook><url>https://hooks.example.com/x</url><ignored>1</ignored>"
        b"<eventTypes><eventType>pet.sold</eventType></eventTypes></Webhook>"
    )
    response = await client.post("/v2/webhooks", data=xml, headers={"Content-Type": "application/xml", **KEY})
    assert response.status == 200, await response.text()
    assert (await response.json())["eventTypes"] == ["pet.sold"]
    for bad in (
        b"<Pet><url>https://h.example.com/</url></Pet>",
        b"<Webhook><url>",
        b'<!DOCTYPE x [<!ENTITY e "e">]><Webhook><url>&e;</url></Webhook>',
    ):
        response = await client.post(
            "/v2/webhooks", data=bad, headers={"Content-Type": "application/xml", **KEY}
        )
        assert response.status == 400, bad
        assert (await response.json())["type"] == "error"


async def test_bodies_are_bounded_like_every_other(
    client: Client, backend: Backend, settings: GatewaySettings
) -> None:
    too_long = b'{"url": "https://h.example.com/", "eventTypes": ["' + b"a" * settings.max_body_bytes + b'"]}'
    response = await client.post(
        "/v2/webhooks", data=io.BytesIO(too_long), headers={"Content-Type": "application/json", **KEY}
    )
    assert response.status == 413
    too_many = json.dumps({**NEW, "eventTypes": ["order.placed"] * 1000}).encode()
    response = await client.post(
        "/v2/webhooks", data=too_many, headers={"Content-Type": "application/json", **KEY}
    )
    assert response.status == 413
    response = await client.post("/v2/webhooks", data=b"url=x", headers={"Content-Type": "text/plain", **KEY})
    assert response.status == 415
    assert webhook_calls(backend) == []


async def test_past_the_services_most_endpoints_is_429_with_its_retry_after(
    client: Client, backend: Backend
) -> None:
    for _ in range(MAX_ENDPOINTS):
        backend.webhooks.add()
    response = await client.post("/v2/webhooks", json=NEW, headers=KEY)
    assert await error_of(Wire.JSON, response) == (
        429,
        f"the webhook service holds its most endpoints ({MAX_ENDPOINTS})",
    )
    assert response.headers["Retry-After"] == "60"


# ---------------------------------------------------------------------------------------
# The webhook service is off the shop's critical path


@pytest.fixture
async def webhooks_down(settings: GatewaySettings, backend: Backend) -> Any:
    async for served in serve_gateway(settings, backend.clients(webhook_addr=unused_address())):
        yield served


async def test_without_the_webhook_service_its_operations_are_503_and_the_shop_stays_ready(
    webhooks_down: Client, backend: Backend
) -> None:
    for method, path, request in operations(1):
        response = await webhooks_down.request(method, path, headers=KEY, **request)
        assert await error_of(Wire.JSON, response) == (503, "the webhook service is unavailable"), path
        assert response.headers["Retry-After"] == "1"
    ready = await webhooks_down.get("/readyz")
    assert ready.status == 200
    assert (await ready.json())[
        "message"
    ] == "ready; the webhook service not serving (its operations answer 503)"
    await backend.add_pet(1, "Rex")
    assert (await webhooks_down.get("/v2/pet/1")).status == 200


async def test_ready_says_nothing_of_a_webhook_service_that_serves(client: Client) -> None:
    assert (await (await client.get("/readyz")).json())["message"] == "ready"
