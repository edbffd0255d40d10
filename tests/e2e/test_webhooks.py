"""Webhooks end to end: staff register a receiver over the API, orders and their pets change,
and the receiver (HTTPS, its own certificate, tests/e2e/webhooks.py) gets each change signed
with Standard Webhooks, each order's and each pet's events in order, the data as the API shows
it; a receiver that fails gets the same webhook-id again. Registering is refused for targets
that are not https or point into private networks, and for anyone but staff.

The receivers run on this host: on loopback in process mode; in the container modes (compose,
k8s) on the address the run's script chose for the containers to reach (tests/e2e/conftest.py),
so the delivery tests run in every mode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from standardwebhooks import Webhook
from standardwebhooks.exceptions import WebhookVerificationError

from petstore_devstack.webhook_receiver import WebhookReceiver
from tests.e2e.callers import Customer, new_pet, sign_up
from tests.e2e.client import JSON, Api, Reply
from tests.e2e.conftest import RECEIVERS_REACHABLE, runs_before
from tests.e2e.webhooks import (
    ALL_EVENT_TYPES,
    Verifier,
    WebhookReceivers,
    arrivals,
    report,
    signature_error,
    wait_until,
)

pytestmark = pytest.mark.since("gateway", "1.1.0")

DELIVERY_SECONDS = 30.0
"""How long the events of a few changes may take to arrive: a poll of the outboxes (1 s), and
a retry's backoff (up to 2 s for the first) with room for a loaded two-core machine."""


@dataclass
class Endpoint:
    id: int
    secret: str
    url: str
    path: str
    receiver: WebhookReceiver


async def create(api: Api, url: str, event_types: list[str] | tuple[str, ...], key: str | None = "") -> Reply:
    """POST /webhooks as `key` (the static key, staff, when left out; None: nobody)."""
    body = json.dumps({"url": url, "eventTypes": list(event_types)})
    return await api.call(
        "POST", "/webhooks", body=body, content_type=JSON, api_key=api.static_key if key == "" else key
    )


@pytest.fixture
def receivers(webhook_receivers: WebhookReceivers) -> WebhookReceivers:
    """The session's receivers (skipped, saying why, where the webhook service cannot reach any)."""
    return webhook_receivers


@pytest.fixture
async def endpoints(api: Api) -> AsyncIterator[list[Endpoint]]:
    """The endpoints a test registers (append them): deleted afterwards, so that no later test's
    events go to them."""
    made: list[Endpoint] = []
    yield made
    for endpoint in made:
        deleted = await api.call("DELETE", f"/webhooks/{endpoint.id}", api_key=api.static_key)
        assert deleted.status == 200, deleted.text


async def register(
    api: Api, receiver: WebhookReceiver, unique: str, endpoints: list[Endpoint], event_types: tuple[str, ...]
) -> Endpoint:
    """An endpoint at a path of its own on `receiver`, as staff; its secret as answered."""
    path = f"/webhooks/{unique}"
    url = receiver.url.removesuffix("/webhooks") + path
    reply = await create(api, url, event_types)
    assert reply.status == 200, reply.text
    body = reply.json
    assert (body["url"], body["eventTypes"], body["state"]) == (url, list(event_types), "enabled"), body
    assert body["secret"].startswith("whsec_"), body
    endpoint = Endpoint(body["id"], body["secret"], url, path, receiver)
    endpoints.append(endpoint)
    return endpoint


async def get_json(api: Api, path: str) -> Any:
    reply = await api.call("GET", path, api_key=api.static_key)
    assert reply.status == 200, (path, reply.status, reply.text)
    return reply.json


async def move(api: Api, order_id: int, status: str) -> dict[str, Any]:
    reply = await api.call(
        "PUT",
        f"/store/order/{order_id}",
        body=json.dumps({"status": status}),
        content_type=JSON,
        api_key=api.static_key,
    )
    assert reply.status == 200, reply.text
    moved: dict[str, Any] = reply.json
    return moved


@pytest.mark.since("order-service", "1.1.0")
@pytest.mark.since("pet-service", "1.1.0")
async def test_every_change_arrives_signed_in_order_with_the_api_shape(
    api: Api, receivers: WebhookReceivers, unique: str, endpoints: list[Endpoint]
) -> None:
    endpoint = await register(api, receivers.steady, unique, endpoints, ALL_EVENT_TYPES)
    shown: dict[tuple[str, str], Any] = {}
    """(subject, event type) -> what GET showed right after the change."""

    # One order placed, approved and delivered: its pet reserved, then sold.
    sold = await new_pet(api, f"{unique}a")
    first = (await api.send("POST", "/store/order", {"petId": sold["id"]}, JSON)).json
    first_subject, sold_subject = f"order:{first['id']}", f"pet:{sold['id']}"
    shown[first_subject, "order.placed"] = await get_json(api, f"/store/order/{first['id']}")
    shown[sold_subject, "pet.reserved"] = await get_json(api, f"/pet/{sold['id']}")
    await move(api, first["id"], "approved")
    shown[first_subject, "order.approved"] = await get_json(api, f"/store/order/{first['id']}")
    await move(api, first["id"], "delivered")
    shown[first_subject, "order.delivered"] = await get_json(api, f"/store/order/{first['id']}")
    shown[sold_subject, "pet.sold"] = await get_json(api, f"/pet/{sold['id']}")
    # Another placed and cancelled: its pet reserved, then released.
    kept = await new_pet(api, f"{unique}b")
    second = (await api.send("POST", "/store/order", {"petId": kept["id"]}, JSON)).json
    second_subject, kept_subject = f"order:{second['id']}", f"pet:{kept['id']}"
    shown[second_subject, "order.placed"] = before_deletion = await get_json(
        api, f"/store/order/{second['id']}"
    )
    shown[kept_subject, "pet.reserved"] = await get_json(api, f"/pet/{kept['id']}")
    cancelled = await api.call("DELETE", f"/store/order/{second['id']}", api_key=api.static_key)
    assert cancelled.status == 200, cancelled.text
    shown[second_subject, "order.cancelled"] = before_deletion  # gone: the event tells it as it was
    shown[kept_subject, "pet.released"] = await get_json(api, f"/pet/{kept['id']}")
    assert shown[sold_subject, "pet.sold"]["status"] == "sold"
    assert shown[kept_subject, "pet.released"]["status"] == "available"

    expected = {
        first_subject: ["order.placed", "order.approved", "order.delivered"],
        sold_subject: ["pet.reserved", "pet.sold"],
        second_subject: ["order.placed", "order.cancelled"],
        kept_subject: ["pet.reserved", "pet.released"],
    }
    verifier = Verifier(endpoint.receiver, endpoint.path, endpoint.secret)

    def ours() -> list[Any]:  # the endpoint may also get earlier tests' events, still unread then
        return [a for a in arrivals(verifier.check_new()) if a.subject in expected]

    def all_arrived() -> bool:
        return not report(expected, ours()).missing

    await wait_until(all_arrived, DELIVERY_SECONDS, f"the events of {sorted(expected)}")
    seen = ours()
    result = report(expected, seen)
    assert not verifier.errors, verifier.errors
    assert {subject: result.delivered[subject] for subject in expected} == expected  # each in its order
    assert not result.out_of_order, result
    assert not result.conflicting_ids, result
    for arrival in seen:
        # The data is what the API answered after the change, in the same JSON.
        assert arrival.payload["data"] == shown[arrival.subject, arrival.type], arrival
        assert set(arrival.payload) == {"type", "timestamp", "data"}, arrival.payload
        assert datetime.fromisoformat(arrival.payload["timestamp"]).tzinfo is not None
    assert len({arrival.id for arrival in seen}) == sum(len(kinds) for kinds in expected.values())

    # The signature binds the body, the id, the time and the secret: a forged one fails.
    genuine = next(item for item in endpoint.receiver.received if item.path == endpoint.path)
    assert signature_error(genuine, endpoint.secret) == ""
    tampered = (
        genuine.body.replace(b'"data":', b'"data" :') if b'"data":' in genuine.body else genuine.body + b" "
    )
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint.secret).verify(tampered, dict(genuine.headers))
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC13cm9uZyE=").verify(
            genuine.body, dict(genuine.headers)
        )
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint.secret).verify(genuine.body, {**genuine.headers, "webhook-id": "msg_forged"})

    # Staff see the endpoint, never its secret again, and its delivered attempts.
    listed = await api.call("GET", "/webhooks", api_key=api.static_key)
    assert listed.status == 200, listed.text
    assert endpoint.secret not in listed.text
    mine = [item for item in listed.json if item["id"] == endpoint.id]
    assert len(mine) == 1, mine
    assert "secret" not in mine[0], mine
    assert (mine[0]["url"], mine[0]["eventTypes"], mine[0]["state"]) == (
        endpoint.url,
        list(ALL_EVENT_TYPES),
        "enabled",
    )
    attempts = await get_json(api, f"/webhooks/{endpoint.id}/deliveries")
    by_id = {attempt["messageId"]: attempt for attempt in attempts}
    for arrival in seen:
        attempt = by_id[arrival.id]
        assert (attempt["eventType"], attempt["outcome"], attempt["responseStatus"]) == (
            arrival.type,
            "delivered",
            204,
        ), attempt


ORDERS_TELL_NOTHING = runs_before("order-service", "1.1.0")
PETS_TELL_NOTHING = runs_before("pet-service", "1.1.0")
ONE_SERVICE_TELLS_NOTHING = (
    "only in a version-skew run where the order or the pet service runs its release before events"
)
QUIET_POLLS_SECONDS = 5.0
"""Long enough for five reads of the outboxes: what an older service never tells stays untold."""


@pytest.mark.skipif(not (ORDERS_TELL_NOTHING or PETS_TELL_NOTHING), reason=ONE_SERVICE_TELLS_NOTHING)
async def test_beside_a_service_of_the_release_before_events_the_others_still_arrive(
    api: Api, receivers: WebhookReceivers, unique: str, endpoints: list[Endpoint]
) -> None:
    """The webhook service beside an order or pet service of the release before events (it
    answers UNIMPLEMENTED): the endpoints API still works, what the other service tells still
    arrives, signed and in order, and the older one's changes are simply not told."""
    endpoint = await register(api, receivers.steady, unique, endpoints, ALL_EVENT_TYPES)
    pet = await new_pet(api, f"{unique}p")
    order = (await api.send("POST", "/store/order", {"petId": pet["id"]}, JSON)).json
    await move(api, order["id"], "approved")
    order_subject, pet_subject = f"order:{order['id']}", f"pet:{pet['id']}"
    verifier = Verifier(endpoint.receiver, endpoint.path, endpoint.secret)

    def ours() -> list[Any]:
        return [a for a in arrivals(verifier.check_new()) if a.subject in (order_subject, pet_subject)]

    if PETS_TELL_NOTHING:  # the order service tells; it placed the order without a reservation
        expected = {order_subject: ["order.placed", "order.approved"]}
        await wait_until(lambda: not report(expected, ours()).missing, DELIVERY_SECONDS, str(expected))
    else:  # an order service before events reserves nothing either: nobody has anything to tell
        await asyncio.sleep(QUIET_POLLS_SECONDS)
        expected = {}
    seen = ours()
    assert not verifier.errors, verifier.errors
    assert {arrival.subject for arrival in seen} == set(expected), seen
    assert not report(expected, seen).out_of_order
    listed = await get_json(api, "/webhooks")
    assert [item["state"] for item in listed if item["id"] == endpoint.id] == ["enabled"]


@pytest.mark.since("order-service", "1.1.0")
async def test_a_failed_delivery_comes_again_with_the_same_webhook_id(
    api: Api, receivers: WebhookReceivers, unique: str, endpoints: list[Endpoint]
) -> None:
    receiver = receivers.scripted
    receiver.answers.append(500)  # the first request this endpoint gets (then 204)
    endpoint = await register(api, receiver, unique, endpoints, ("order.placed",))
    pet = await new_pet(api, unique)
    order = (await api.send("POST", "/store/order", {"petId": pet["id"]}, JSON)).json
    mine = Verifier(receiver, endpoint.path, endpoint.secret)

    def ours() -> list[Any]:
        return [a for a in arrivals(mine.check_new()) if a.subject == f"order:{order['id']}"]

    def retried() -> bool:
        failed = [item for item in mine.mine() if item.answer == 500]
        return bool(failed) and any(item.id == failed[0].id and item.answer == 204 for item in mine.mine())

    await wait_until(retried, DELIVERY_SECONDS, "a 500 answered, then the same webhook-id again")
    assert not mine.errors, mine.errors
    items = mine.mine()
    failed = next(item for item in items if item.answer == 500)
    again = [item for item in items if item.id == failed.id]
    assert [item.answer for item in again][:2] == [500, 204]
    assert again[0].body == again[1].body  # the same message, signed again
    await wait_until(lambda: bool(ours()), DELIVERY_SECONDS, "the order's placed event")
    attempts = await get_json(api, f"/webhooks/{endpoint.id}/deliveries")
    tries = sorted(
        (attempt["attempt"], attempt["outcome"], attempt["responseStatus"])
        for attempt in attempts
        if attempt["messageId"] == failed.id
    )
    assert tries[:2] == [(1, "failed", 500), (2, "delivered", 204)], attempts


# --- who may, and where to: run in every mode ------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9/webhooks", "not https"),
        ("ftp://example.com/webhooks", "not https"),
        ("https://10.1.2.3/webhooks", "a private address"),
        ("https://192.168.0.10:8443/webhooks", "a private address"),
        ("https://169.254.169.254/latest/meta-data/", "the cloud metadata address (link-local)"),
        ("https://[::ffff:10.1.2.3]/webhooks", "a private address, IPv4-mapped"),
        ("https://[fd00::1]/webhooks", "a private IPv6 address"),
        ("https://[fe80::1]/webhooks", "a link-local IPv6 address"),
        ("https://0.0.0.0/webhooks", "the unspecified address"),
        ("https://224.0.0.1/webhooks", "a multicast address"),
        ("https://no-such-host.invalid/webhooks", "a name that does not resolve"),
        ("https:///webhooks", "no host"),
        ("not a url", "no URL"),
    ],
)
async def test_an_unsafe_or_unusable_target_is_refused(api: Api, url: str, why: str) -> None:
    reply = await create(api, url, ALL_EVENT_TYPES)
    assert reply.status == 400, (why, reply.status, reply.text)
    assert reply.error_message(), why
    listed = await get_json(api, "/webhooks")
    assert url not in [item["url"] for item in listed], why  # nothing stored


@pytest.mark.parametrize(
    "event_types", [[], ["order.shipped"], ["ORDER.PLACED"], ["order.placed", "pet.sold", "x" * 65]]
)
async def test_unknown_or_no_event_types_are_refused(api: Api, event_types: list[str]) -> None:
    reply = await create(api, "https://10.1.2.3/webhooks", event_types)
    assert reply.status == 400, reply.text
    assert reply.error_message()


@pytest.mark.parametrize(
    "body", ["", "[]", '{"url": 5, "eventTypes": ["order.placed"]}', '{"eventTypes": "x"}', "{"]
)
async def test_a_malformed_body_is_400(api: Api, body: str) -> None:
    reply = await api.call("POST", "/webhooks", body=body, content_type=JSON, api_key=api.static_key)
    assert reply.status == 400, reply.text
    assert reply.error_message()


@pytest.fixture
async def customer(api: Api, unique: str) -> Customer:
    return await sign_up(api, unique, "cust")


@pytest.fixture
async def staff_endpoint_id(
    api: Api, unique: str, endpoints: list[Endpoint], request: pytest.FixtureRequest
) -> int:
    """An endpoint of staff's to try to read and delete: a real one where a receiver can be
    registered; elsewhere an id that names none (the refusal comes before any look-up)."""
    if not RECEIVERS_REACHABLE:
        return 987_654_321
    receivers: WebhookReceivers = request.getfixturevalue("webhook_receivers")
    return (await register(api, receivers.steady, unique, endpoints, ("order.placed",))).id


@pytest.mark.parametrize("who", ["anonymous", "customer"])
async def test_only_staff_manage_webhooks(
    api: Api, customer: Customer, staff_endpoint_id: int, unique: str, who: str
) -> None:
    key, status = (None, 401) if who == "anonymous" else (customer.token, 403)
    url = f"https://127.0.0.1:9/{unique}"
    replies = {
        "create": await create(api, url, ALL_EVENT_TYPES, key),
        "list": await api.call("GET", "/webhooks", api_key=key),
        "deliveries": await api.call("GET", f"/webhooks/{staff_endpoint_id}/deliveries", api_key=key),
        "delete": await api.call("DELETE", f"/webhooks/{staff_endpoint_id}", api_key=key),
    }
    for operation, reply in replies.items():
        assert reply.status == status, (who, operation, reply.status, reply.text)
        assert reply.error_message(), (who, operation)
        assert "whsec_" not in reply.text, (who, operation)
    # Nothing happened: no endpoint made, staff's still there.
    listed = await get_json(api, "/webhooks")
    assert url not in [item["url"] for item in listed]
    if RECEIVERS_REACHABLE:
        assert staff_endpoint_id in [item["id"] for item in listed]


async def test_an_endpoint_that_does_not_exist_is_404(api: Api) -> None:
    for method, path in (("DELETE", "/webhooks/987654321"), ("GET", "/webhooks/987654321/deliveries")):
        reply = await api.call(method, path, api_key=api.static_key)
        assert reply.status == 404, (method, path, reply.text)
        assert reply.error_message()
    for bad in ("0", "-1", "abc", "99999999999999999999999"):
        reply = await api.call("DELETE", f"/webhooks/{bad}", api_key=api.static_key)
        assert reply.status in (400, 404), (bad, reply.status, reply.text)
        assert reply.error_message()
