"""Deliveries to a real HTTPS receiver on loopback (petstore_devstack.webhook_receiver), which
verifies each request's Standard Webhooks signature: signed, retried with the same webhook-id
after a backoff, the endpoint disabled after its last attempt, each subject's events in order,
a hung endpoint never holding up another, and no connection to an address refused at the
moment of connecting (DNS rebinding)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import random
import socket
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from prometheus_client import REGISTRY

from petstore_devstack.webhook_receiver import HANG, WebhookReceiver
from petstore_webhook.delivery import (
    DeliveryPolicy,
    DeliverySupervisor,
    GuardedResolver,
    RefusedAddress,
    literal_address_refused,
    retry_delay,
)
from petstore_webhook.payloads import webhook_body
from petstore_webhook.storage.base import EndpointRecord, EndpointState, Event, Outcome
from petstore_webhook.storage.memory import MemoryWebhookStore
from petstore_webhook.targets import IPNetwork

SECRET = "whsec_" + base64.b64encode(b"receiver secret, 24 byte").decode()
LOOPBACK: tuple[IPNetwork, ...] = (ipaddress.ip_network("127.0.0.0/8"),)
ORDER_TYPES = ("order.placed", "order.approved", "order.delivered")


def event(order_id: int, sequence: int, event_type: str = "order.placed") -> Event:
    return Event(
        id=f"evt_{order_id}_{sequence}",
        type=event_type,
        subject=f"order:{order_id}",
        sequence=sequence,
        time=datetime(2026, 5, 1, 12, 0, sequence, tzinfo=UTC),
        data={"id": order_id, "petId": 1, "quantity": 1, "status": "placed", "complete": False},
    )


def policy(receiver: WebhookReceiver, **changes: object) -> DeliveryPolicy:
    values: dict[str, object] = {
        "max_attempts": 5,
        "retry_base_seconds": 0.01,
        "retry_max_seconds": 0.05,
        "timeout_seconds": 5.0,
        "allowed_networks": LOOPBACK,
        "ca_file": receiver.ca_file,
    }
    values.update(changes)
    return DeliveryPolicy(**values)  # type: ignore[arg-type]


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET) as started:
        yield started


@contextlib.asynccontextmanager
async def running(supervisor: DeliverySupervisor) -> AsyncIterator[DeliverySupervisor]:
    task = asyncio.create_task(supervisor.run())
    try:
        yield supervisor
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def endpoint_on(store: MemoryWebhookStore, url: str) -> EndpointRecord:
    return await store.create_endpoint(url=url, event_types=ORDER_TYPES, secret=SECRET, at=datetime.now(UTC))


async def eventually(check: Callable[[], Awaitable[bool]], *, within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while not await check():  # noqa: ASYNC110 (store and receiver states, polled)
            await asyncio.sleep(0.01)


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_delivery_is_signed_with_the_endpoint_secret_and_recorded(
    store: MemoryWebhookStore, receiver: WebhookReceiver
) -> None:
    endpoint = await endpoint_on(store, receiver.url)
    sent = event(12, 1)
    delivered_before = metric("petstore_webhook_deliveries_total", outcome="delivered")
    await store.accept_events([sent])

    async with running(DeliverySupervisor(store, policy(receiver))):
        [request] = await receiver.wait_for(1)
        await eventually(lambda: _attempts_are(store, endpoint.id, [Outcome.DELIVERED]))

    assert request.verified, request.error
    assert request.id == sent.id
    assert request.body == webhook_body(sent)
    assert request.headers["content-type"] == "application/json"
    assert "petstore-webhook-service" in request.headers["user-agent"]
    assert metric("petstore_webhook_deliveries_total", outcome="delivered") == delivered_before + 1
    assert await store.next_due(endpoint.id) is None  # nothing left pending


async def test_failed_attempts_are_retried_with_the_same_webhook_id_until_one_succeeds(
    store: MemoryWebhookStore, receiver: WebhookReceiver
) -> None:
    endpoint = await endpoint_on(store, receiver.url)
    receiver.answers.extend([500, 503])
    await store.accept_events([event(12, 1)])

    async with running(DeliverySupervisor(store, policy(receiver))):
        requests = await receiver.wait_for(3)
        await eventually(
            lambda: _attempts_are(store, endpoint.id, [Outcome.DELIVERED, Outcome.FAILED, Outcome.FAILED])
        )

    assert [request.id for request in requests] == ["evt_12_1"] * 3
    assert all(request.verified for request in requests)
    assert [request.answer for request in requests] == [500, 503, 204]
    attempts = await store.recent_attempts(endpoint.id, limit=10)
    assert [(a.attempt, a.response_status) for a in attempts] == [(3, 204), (2, 503), (1, 500)]
    assert (await store.get_endpoint(endpoint.id)).state is EndpointState.ENABLED


class Fixed(random.Random):
    """Always the top (or bottom) of the range asked for."""

    def __init__(self, *, high: bool) -> None:
        super().__init__()
        self.high = high

    def uniform(self, a: float, b: float) -> float:
        return b if self.high else a


def test_the_backoff_doubles_up_to_its_bound_with_full_jitter() -> None:
    settings = DeliveryPolicy(
        max_attempts=10, retry_base_seconds=2.0, retry_max_seconds=60.0, timeout_seconds=1
    )
    highest, lowest = Fixed(high=True), Fixed(high=False)

    assert [retry_delay(n, settings, highest) for n in range(1, 7)] == [2, 4, 8, 16, 32, 60]
    assert retry_delay(10_000, settings, highest) == 60  # no overflow however many attempts
    assert retry_delay(3, settings, lowest) == 0
    spread = {round(retry_delay(4, settings), 6) for _ in range(50)}
    assert len(spread) > 40
    assert all(0 <= delay <= 16 for delay in spread)


async def test_the_endpoint_is_disabled_after_the_last_attempt_and_sent_nothing_more(
    store: MemoryWebhookStore, receiver: WebhookReceiver
) -> None:
    endpoint = await endpoint_on(store, receiver.url)
    receiver.default_answer = 500
    await store.accept_events([event(12, 1), event(13, 1)])
    disabled_before = metric("petstore_webhook_endpoints_disabled_total")

    async with running(
        DeliverySupervisor(store, policy(receiver, max_attempts=3), refresh_seconds=0.05)
    ) as sup:
        await eventually(lambda: _state_is(store, endpoint.id, EndpointState.DISABLED))
        await eventually(lambda: _true(endpoint.id not in sup.running()))
        await asyncio.sleep(0.2)  # several refreshes: no worker comes back for it
        assert endpoint.id not in sup.running()

        sent = len(receiver.received)
        await asyncio.sleep(0.2)  # several refreshes and retry delays: nothing more is sent
        assert len(receiver.received) == sent

    disabled = await store.get_endpoint(endpoint.id)
    assert "failed 3 attempts" in disabled.disabled_reason
    assert "HTTP 500" in disabled.disabled_reason
    tries = Counter(request.id for request in receiver.received)
    assert max(tries.values()) == 3
    assert set(tries) == {"evt_12_1", "evt_13_1"}
    assert any(f"event {event_id} " in disabled.disabled_reason for event_id, n in tries.items() if n == 3)
    assert metric("petstore_webhook_endpoints_disabled_total") == disabled_before + 1


async def test_a_redirect_is_a_failure_and_is_not_followed(
    store: MemoryWebhookStore, receiver: WebhookReceiver
) -> None:
    endpoint = await endpoint_on(store, receiver.url)
    receiver.answers.append(302)
    await store.accept_events([event(12, 1)])

    async with running(DeliverySupervisor(store, policy(receiver))):
        await eventually(lambda: _attempts_are(store, endpoint.id, [Outcome.DELIVERED, Outcome.FAILED]))

    assert [request.answer for request in receiver.received] == [302, 204]


async def test_each_subject_s_events_arrive_in_order_through_failures(
    store: MemoryWebhookStore, receiver: WebhookReceiver
) -> None:
    await endpoint_on(store, receiver.url)
    # The first answers fail, whichever subject they hit: a later event of that subject must
    # wait for the earlier one's retry, while the other subjects go on.
    receiver.answers.extend([500, 500, 204, 500])
    events = [
        event(order_id, sequence, ORDER_TYPES[sequence - 1])
        for sequence in (1, 2, 3)
        for order_id in (1, 2, 3)
    ]
    await store.accept_events(events)

    async with running(DeliverySupervisor(store, policy(receiver))):
        await eventually(lambda: _true(len([r for r in receiver.received if r.answer == 204]) == len(events)))

    delivered_at: dict[str, int] = {}
    for index, request in enumerate(receiver.received):
        assert request.verified
        order_id, sequence = (int(part) for part in request.id.removeprefix("evt_").split("_"))
        if sequence > 1:  # its predecessor was answered 2xx before it was first sent
            assert delivered_at[f"evt_{order_id}_{sequence - 1}"] < index, request.id
        if request.answer == 204:
            delivered_at[request.id] = index
    assert len(delivered_at) == len(events)


async def test_a_hung_endpoint_does_not_delay_another(store: MemoryWebhookStore, tmp_path: Path) -> None:
    async with WebhookReceiver(SECRET, default_answer=HANG) as hung, WebhookReceiver(SECRET) as healthy:
        stuck = await endpoint_on(store, hung.url)
        fine = await endpoint_on(store, healthy.url)
        events = [event(1, 1), event(1, 2, "order.approved"), event(2, 1)]
        await store.accept_events(events)

        both_cas = tmp_path / "cas.pem"
        both_cas.write_bytes(Path(hung.ca_file).read_bytes() + Path(healthy.ca_file).read_bytes())  # noqa: ASYNC240
        supervisor = DeliverySupervisor(store, policy(hung, timeout_seconds=60.0, ca_file=str(both_cas)))
        async with running(supervisor):
            await hung.wait_for(1)  # the hung endpoint holds a request...
            delivered = await healthy.wait_for(len(events))  # ...while the other gets everything
            await eventually(lambda: _attempts_are(store, fine.id, [Outcome.DELIVERED] * len(events)))

            assert await store.recent_attempts(stuck.id, limit=10) == []  # still waiting for its answer
            assert {request.id for request in delivered} == {e.id for e in events}


async def test_a_name_resolving_to_loopback_is_refused_when_connecting(
    store: MemoryWebhookStore, receiver: WebhookReceiver
) -> None:
    # Registered while it resolved elsewhere; resolving to 127.0.0.1 now (DNS rebinding).
    by_name = await endpoint_on(store, receiver.url.replace("127.0.0.1", "localhost"))
    by_address = await endpoint_on(store, receiver.url)
    await store.accept_events([event(12, 1)])

    async with running(DeliverySupervisor(store, policy(receiver, allowed_networks=(), max_attempts=1))):
        await eventually(lambda: _state_is(store, by_name.id, EndpointState.DISABLED))
        await eventually(lambda: _state_is(store, by_address.id, EndpointState.DISABLED))

    assert receiver.received == []  # no connection was made to either
    [named] = await store.recent_attempts(by_name.id, limit=1)
    assert "localhost" in named.error
    assert "may not reach" in named.error
    [literal] = await store.recent_attempts(by_address.id, limit=1)
    assert "127.0.0.1 is an address deliveries may not reach" in literal.error


async def test_the_same_name_is_delivered_to_when_loopback_is_allowed(
    store: MemoryWebhookStore, receiver: WebhookReceiver
) -> None:
    endpoint = await endpoint_on(store, receiver.url.replace("127.0.0.1", "localhost"))
    await store.accept_events([event(12, 1)])

    async with running(DeliverySupervisor(store, policy(receiver))):
        await eventually(lambda: _attempts_are(store, endpoint.id, [Outcome.DELIVERED]))

    assert [request.verified for request in receiver.received] == [True]


class TableResolver(AbstractResolver):
    def __init__(self, addresses: list[str]) -> None:
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=address, port=port, family=family, proto=0, flags=0)
            for address in self.addresses
        ]

    async def close(self) -> None:
        pass


@pytest.mark.parametrize(
    "refused",
    [
        "127.0.0.1",
        "10.1.2.3",
        "169.254.169.254",
        "::1",
        "::ffff:127.0.0.1",
        "fe80::1",
        "0.0.0.0",
        "224.0.0.1",
    ],
)
async def test_the_resolver_drops_refused_addresses_and_fails_when_none_is_left(refused: str) -> None:
    mixed = GuardedResolver((), TableResolver([refused, "93.184.215.14"]))
    only_refused = GuardedResolver((), TableResolver([refused]))

    assert [result["host"] for result in await mixed.resolve("hooks.example.com", 443)] == ["93.184.215.14"]
    with pytest.raises(RefusedAddress, match=r"hooks\.example\.com"):
        await only_refused.resolve("hooks.example.com", 443)


def test_an_ip_literal_url_is_judged_without_resolving() -> None:
    assert literal_address_refused("https://[::ffff:10.0.0.1]:8443/x", ()) is not None
    assert literal_address_refused("https://127.0.0.1/x", ()) is not None
    assert literal_address_refused("https://127.0.0.1/x", LOOPBACK) is None
    assert literal_address_refused("https://93.184.215.14/x", ()) is None
    assert literal_address_refused("https://hooks.example.com/x", ()) is None  # the resolver's job


async def test_workers_follow_the_endpoint_list(store: MemoryWebhookStore, receiver: WebhookReceiver) -> None:
    first = await endpoint_on(store, receiver.url)
    supervisor = DeliverySupervisor(store, policy(receiver), refresh_seconds=60.0)
    async with running(supervisor):
        await eventually(lambda: _true(supervisor.running() == {first.id}))
        second = await endpoint_on(store, receiver.url)
        accepted = await store.accept_events([event(5, 1)])
        supervisor.wake(accepted.endpoint_ids)  # a new endpoint's worker starts when woken
        await eventually(lambda: _true(supervisor.running() == {first.id, second.id}))
        await store.delete_endpoint(first.id)
        supervisor.wake([first.id])  # its worker is woken: it finds nothing to send
        supervisor.wake([99])  # unknown: the list is read again
        await eventually(lambda: _true(supervisor.running() == {second.id}))
        await store.disable_endpoint(second.id, "by a test")
        supervisor.wake([99])
        await eventually(lambda: _true(supervisor.running() == frozenset()))


async def _attempts_are(store: MemoryWebhookStore, endpoint_id: int, outcomes: list[Outcome]) -> bool:
    attempts = await store.recent_attempts(endpoint_id, limit=len(outcomes) + 1)
    return [attempt.outcome for attempt in attempts] == outcomes


async def _state_is(store: MemoryWebhookStore, endpoint_id: int, state: EndpointState) -> bool:
    return (await store.get_endpoint(endpoint_id)).state is state


async def _true(value: bool) -> bool:
    return value
