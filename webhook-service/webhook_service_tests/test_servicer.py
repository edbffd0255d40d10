"""WebhookService over a real in-process gRPC server (memory store), called through the stub
as the gateway calls it: staff only, endpoints checked (https, public addresses, known event
types), the secret shown once."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import grpc
import pytest
from standardwebhooks import Webhook

from petstore.webhook.v1 import webhook_service_pb2 as pb
from petstore.webhook.v1 import webhook_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import ORDER_SERVICE, WEBHOOK_SERVICE
from petstore_common.caller_testing import signed_channel
from petstore_common.errors import RETRY_AFTER_METADATA
from petstore_common.field_violations import STATUS_DETAILS_KEY
from petstore_common.grpc_server import RunningService, start_service
from petstore_webhook.event_types import event_type_names
from petstore_webhook.service import build_definition
from petstore_webhook.servicer import DEFAULT_DELIVERIES_PAGE, STAFF_ONLY
from petstore_webhook.storage.base import ATTEMPTS_KEPT, MAX_ENDPOINTS, Attempt, Event, Outcome
from petstore_webhook.storage.memory import MemoryWebhookStore

from .conftest import PUBLIC_HOST, FakeResolver, local_settings

if TYPE_CHECKING:
    from petstore.webhook.v1.webhook_service_pb2_grpc import WebhookServiceAsyncStub

STAFF = callers.staff()
REFUSED_CALLERS = [
    pytest.param(callers.customer(7), id="customer"),
    pytest.param(callers.anonymous(), id="anonymous"),
    pytest.param(callers.Caller(), id="no caller"),
]
URL = f"https://{PUBLIC_HOST}/petstore"


@pytest.fixture
async def running(store: MemoryWebhookStore, resolver: FakeResolver) -> AsyncIterator[RunningService]:
    service = await start_service(build_definition(store, resolve=resolver), local_settings())
    try:
        yield service
    finally:
        await service.stop(None)


@pytest.fixture
async def stub(running: RunningService) -> AsyncIterator[WebhookServiceAsyncStub]:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        yield webhook_service_pb2_grpc.WebhookServiceStub(channel)


async def create(
    stub: WebhookServiceAsyncStub, url: str = URL, types: tuple[str, ...] = ("order.placed",)
) -> pb.CreateEndpointResponse:
    return await stub.CreateEndpoint(
        pb.CreateEndpointRequest(url=url, event_types=types, caller=STAFF), timeout=5
    )


async def refused(call: object) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return caught.value


async def test_staff_register_an_endpoint_and_get_its_secret_once(stub: WebhookServiceAsyncStub) -> None:
    created = await create(stub, types=("order.placed", "pet.sold", "order.placed"))

    endpoint = created.endpoint
    assert (endpoint.id, endpoint.url, list(endpoint.event_types)) == (1, URL, ["order.placed", "pet.sold"])
    assert (endpoint.state, endpoint.disabled_reason) == (pb.ENDPOINT_STATE_ENABLED, "")
    assert abs(endpoint.created_at.ToDatetime(UTC) - datetime.now(UTC)) < timedelta(seconds=5)
    assert created.secret.startswith("whsec_")
    assert len(base64.b64decode(created.secret.removeprefix("whsec_"), validate=True)) == 32
    # A receiver verifies with it as Standard Webhooks says.
    signer = Webhook(created.secret)
    now = datetime.now(UTC)
    headers = {
        "webhook-id": "evt_1",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signer.sign("evt_1", now, "{}"),
    }
    assert Webhook(created.secret).verify("{}", headers) == {}

    listed = await stub.ListEndpoints(pb.ListEndpointsRequest(caller=STAFF), timeout=5)
    assert list(listed.endpoints) == [endpoint]
    assert created.secret.removeprefix("whsec_").encode() not in listed.SerializeToString()


async def test_every_endpoint_gets_its_own_secret(stub: WebhookServiceAsyncStub) -> None:
    secrets = {(await create(stub)).secret for _ in range(5)}

    assert len(secrets) == 5


@pytest.mark.parametrize("caller", REFUSED_CALLERS)
async def test_only_staff_may_use_any_method(
    stub: WebhookServiceAsyncStub, store: MemoryWebhookStore, resolver: FakeResolver, caller: callers.Caller
) -> None:
    kept = (await create(stub)).endpoint

    calls = [
        stub.CreateEndpoint(
            pb.CreateEndpointRequest(url=URL, event_types=["order.placed"], caller=caller), timeout=5
        ),
        stub.ListEndpoints(pb.ListEndpointsRequest(caller=caller), timeout=5),
        stub.DeleteEndpoint(pb.DeleteEndpointRequest(id=kept.id, caller=caller), timeout=5),
        stub.ListDeliveries(pb.ListDeliveriesRequest(endpoint_id=kept.id, caller=caller), timeout=5),
    ]
    for call in calls:
        error = await refused(call)
        assert (error.code(), error.details()) == (grpc.StatusCode.PERMISSION_DENIED, STAFF_ONLY)

    # Nothing created, deleted or resolved: staff's own create was the only lookup.
    assert [endpoint.id for endpoint in await store.list_endpoints()] == [kept.id]
    assert resolver.asked == [(PUBLIC_HOST, 443)]


@pytest.mark.parametrize("issuer", [ORDER_SERVICE, WEBHOOK_SERVICE])
async def test_other_services_may_not_call_it_even_claiming_staff(
    running: RunningService, issuer: str
) -> None:
    # Their keys vouch for no caller, and their rights name none of these methods.
    async with signed_channel(f"127.0.0.1:{running.port}", issuer) as channel:
        stub = webhook_service_pb2_grpc.WebhookServiceStub(channel)
        for call in (
            stub.ListEndpoints(pb.ListEndpointsRequest(), timeout=5),
            stub.ListEndpoints(pb.ListEndpointsRequest(caller=STAFF), timeout=5),
        ):
            assert (await refused(call)).code() == grpc.StatusCode.UNAUTHENTICATED


async def test_an_unknown_event_type_is_refused_naming_the_known_ones(stub: WebhookServiceAsyncStub) -> None:
    error = await refused(create(stub, types=("order.placed", "order.shipped")))

    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    known = ", ".join(event_type_names())
    assert error.details() == f"eventTypes[1]: unknown event type 'order.shipped': the known ones are {known}"
    assert any(
        key == STATUS_DETAILS_KEY for key, _ in error.trailing_metadata() or ()
    )  # the neutral violation


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (f"http://{PUBLIC_HOST}/in", "url: must be https"),
        (f"https://admin:pw@{PUBLIC_HOST}/in", "url: must not carry a user name or password"),
        ("https://nowhere.invalid/in", "url: host nowhere.invalid does not resolve"),
        (
            "https://metadata.example.com/latest/meta-data/",
            "url: resolves to a private, loopback, link-local or reserved address (169.254.169.254): "
            "only public addresses are allowed",
        ),
        (
            "https://[::ffff:127.0.0.1]/in",
            "url: resolves to a private, loopback, link-local or reserved address (::ffff:127.0.0.1): "
            "only public addresses are allowed",
        ),
    ],
)
async def test_an_unsafe_url_is_refused(
    stub: WebhookServiceAsyncStub, store: MemoryWebhookStore, resolver: FakeResolver, url: str, message: str
) -> None:
    resolver.table["metadata.example.com"] = ["169.254.169.254"]
    resolver.table["::ffff:127.0.0.1"] = ["::ffff:127.0.0.1"]

    error = await refused(create(stub, url=url))

    assert (error.code(), error.details()) == (grpc.StatusCode.INVALID_ARGUMENT, message)
    assert await store.list_endpoints() == []


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (pb.CreateEndpointRequest(url=URL, caller=STAFF), "eventTypes: must not be empty"),
        (pb.CreateEndpointRequest(event_types=["order.placed"], caller=STAFF), "url"),
        (pb.CreateEndpointRequest(url=URL + "x" * 2048, event_types=["order.placed"], caller=STAFF), "url"),
        (pb.CreateEndpointRequest(url=URL, event_types=["x" * 65], caller=STAFF), "eventTypes[0]"),
        (pb.CreateEndpointRequest(url=URL, event_types=["order.placed"] * 33, caller=STAFF), "eventTypes"),
    ],
)
async def test_the_field_rules_hold_before_anything_is_resolved(
    stub: WebhookServiceAsyncStub, resolver: FakeResolver, request_: pb.CreateEndpointRequest, message: str
) -> None:
    error = await refused(stub.CreateEndpoint(request_, timeout=5))

    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (error.details() or "").startswith(message)
    assert resolver.asked == []


async def test_the_service_holds_at_most_max_endpoints(stub: WebhookServiceAsyncStub) -> None:
    for _ in range(MAX_ENDPOINTS):
        await create(stub)

    error = await refused(create(stub))

    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert error.details() == f"the service holds at most {MAX_ENDPOINTS} endpoints: delete one first"
    assert dict(error.trailing_metadata() or ())[RETRY_AFTER_METADATA] == "60"


async def test_delete_removes_an_endpoint_and_an_absent_one_is_not_found(
    stub: WebhookServiceAsyncStub,
) -> None:
    endpoint = (await create(stub)).endpoint

    await stub.DeleteEndpoint(pb.DeleteEndpointRequest(id=endpoint.id, caller=STAFF), timeout=5)
    error = await refused(
        stub.DeleteEndpoint(pb.DeleteEndpointRequest(id=endpoint.id, caller=STAFF), timeout=5)
    )

    assert (error.code(), error.details()) == (grpc.StatusCode.NOT_FOUND, f"endpoint {endpoint.id} not found")
    assert list((await stub.ListEndpoints(pb.ListEndpointsRequest(caller=STAFF), timeout=5)).endpoints) == []
    bad = await refused(stub.DeleteEndpoint(pb.DeleteEndpointRequest(id=0, caller=STAFF), timeout=5))
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_disabled_endpoint_is_listed_with_its_reason(
    stub: WebhookServiceAsyncStub, store: MemoryWebhookStore
) -> None:
    endpoint = (await create(stub)).endpoint
    await store.disable_endpoint(endpoint.id, "evt_1 failed 12 times: 503")

    [listed] = (await stub.ListEndpoints(pb.ListEndpointsRequest(caller=STAFF), timeout=5)).endpoints

    assert (listed.state, listed.disabled_reason) == (
        pb.ENDPOINT_STATE_DISABLED,
        "evt_1 failed 12 times: 503",
    )


async def test_deliveries_are_listed_newest_first_a_page_at_most_attempts_kept(
    stub: WebhookServiceAsyncStub, store: MemoryWebhookStore
) -> None:
    endpoint = (await create(stub)).endpoint
    event = Event("evt_1", "order.placed", "order:1", 1, datetime(2026, 1, 1, tzinfo=UTC), {"id": 1})
    await store.accept_events([event])
    at = datetime(2026, 1, 2, tzinfo=UTC)
    total = ATTEMPTS_KEPT + 10
    for attempt in range(1, total):
        failure = Attempt(endpoint.id, event.id, event.type, attempt, at, Outcome.FAILED, 500, "answered 500")
        await store.record_attempt(failure, next_attempt_at=at)
    await store.record_attempt(
        Attempt(endpoint.id, event.id, event.type, total, at, Outcome.DELIVERED, 204), next_attempt_at=None
    )

    async def listed(page_size: int) -> list[pb.DeliveryAttempt]:
        request = pb.ListDeliveriesRequest(endpoint_id=endpoint.id, page_size=page_size, caller=STAFF)
        return list((await stub.ListDeliveries(request, timeout=5)).attempts)

    default, capped, three = await listed(0), await listed(10_000), await listed(3)
    assert (len(default), len(capped)) == (DEFAULT_DELIVERIES_PAGE, ATTEMPTS_KEPT)
    assert [attempt.attempt for attempt in three] == [total, total - 1, total - 2]
    newest = three[0]
    assert (newest.message_id, newest.event_type, newest.outcome, newest.response_status, newest.error) == (
        "evt_1",
        "order.placed",
        pb.ATTEMPT_OUTCOME_DELIVERED,
        204,
        "",
    )
    assert newest.attempted_at.ToDatetime(UTC) == at
    assert (three[1].outcome, three[1].response_status, three[1].error) == (
        pb.ATTEMPT_OUTCOME_FAILED,
        500,
        "answered 500",
    )


async def test_deliveries_of_an_absent_endpoint_are_not_found(stub: WebhookServiceAsyncStub) -> None:
    error = await refused(
        stub.ListDeliveries(pb.ListDeliveriesRequest(endpoint_id=9, caller=STAFF), timeout=5)
    )
    assert (error.code(), error.details()) == (grpc.StatusCode.NOT_FOUND, "endpoint 9 not found")

    negative = pb.ListDeliveriesRequest(endpoint_id=9, page_size=-1, caller=STAFF)
    assert (
        await refused(stub.ListDeliveries(negative, timeout=5))
    ).code() == grpc.StatusCode.INVALID_ARGUMENT
