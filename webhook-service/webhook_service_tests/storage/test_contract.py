"""One contract, both stores: the embedded store must behave exactly like the MongoDB one."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from petstore_common.errors import NotFound, ResourceExhausted
from petstore_webhook.storage.base import (
    ATTEMPTS_KEPT,
    MAX_ENDPOINTS,
    Attempt,
    Delivery,
    EndpointRecord,
    EndpointState,
    Event,
    Outcome,
    WebhookStore,
)
from petstore_webhook.storage.documents import Document
from petstore_webhook.storage.memory import MemoryWebhookStore
from petstore_webhook.storage.mongo import MongoWebhookStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SECRET = "whsec_" + "A" * 44
FAR = datetime(2100, 1, 1, tzinfo=UTC)
"""A `now` every accepted delivery is due by."""


@pytest.fixture
def memory_store() -> MemoryWebhookStore:
    return MemoryWebhookStore()


@pytest.fixture
async def mongo_store(mongo_db: AsyncDatabase[Document]) -> MongoWebhookStore:
    store = MongoWebhookStore(mongo_db)
    await store.ensure_indexes()
    return store


@pytest.fixture(params=["memory", pytest.param("mongo", marks=pytest.mark.mongo)])
def store(request: pytest.FixtureRequest) -> WebhookStore:
    implementation: WebhookStore = request.getfixturevalue(f"{request.param}_store")
    return implementation


async def an_endpoint(store: WebhookStore, *types: str) -> EndpointRecord:
    return await store.create_endpoint(
        url="https://hooks.example.com/in", event_types=types or ("order.placed",), secret=SECRET, at=T0
    )


def an_event(event_id: str, subject: str = "order:1", sequence: int = 1, type: str = "order.placed") -> Event:
    return Event(
        id=event_id,
        type=type,
        subject=subject,
        sequence=sequence,
        time=T0 + timedelta(seconds=sequence, microseconds=123_456),
        data={"id": int(subject.split(":")[1]), "status": "placed", "tags": [{"id": 1, "name": "a"}]},
    )


def failed(endpoint_id: int, event: Event, attempt: int = 1, at: datetime = T0) -> Attempt:
    return Attempt(
        endpoint_id, event.id, event.type, attempt, at, Outcome.FAILED, response_status=503, error="503"
    )


def delivered(endpoint_id: int, event: Event, attempt: int = 1, at: datetime = T0) -> Attempt:
    return Attempt(endpoint_id, event.id, event.type, attempt, at, Outcome.DELIVERED, response_status=204)


def ids(deliveries: list[Delivery]) -> list[str]:
    return [delivery.event.id for delivery in deliveries]


async def test_an_endpoint_round_trips_and_is_listed_by_id(store: WebhookStore) -> None:
    first = await an_endpoint(store, "order.placed", "pet.sold")
    second = await an_endpoint(store)

    assert (first.url, first.event_types, first.secret) == (
        "https://hooks.example.com/in",
        ("order.placed", "pet.sold"),
        SECRET,
    )
    assert (first.state, first.disabled_reason, first.created_at) == (EndpointState.ENABLED, "", T0)
    assert await store.get_endpoint(first.id) == first
    assert await store.list_endpoints() == [first, second]
    assert first.id < second.id


async def test_an_absent_endpoint_is_not_found_everywhere(store: WebhookStore) -> None:
    for absent in (
        store.get_endpoint(404),
        store.delete_endpoint(404),
        store.recent_attempts(404, limit=10),
    ):
        with pytest.raises(NotFound, match="endpoint 404 not found"):
            await absent
    await store.disable_endpoint(404, "gone")  # nothing to disable: no error
    assert await store.list_endpoints() == []


async def test_a_deleted_endpoints_id_is_never_given_again(store: WebhookStore) -> None:
    # Its attempts and deliveries must never show under a newcomer.
    first = await an_endpoint(store)
    await store.delete_endpoint(first.id)

    second = await an_endpoint(store)

    assert second.id != first.id
    assert await store.list_endpoints() == [second]


async def test_the_store_holds_at_most_max_endpoints(store: WebhookStore) -> None:
    for _ in range(MAX_ENDPOINTS):
        await an_endpoint(store)

    with pytest.raises(ResourceExhausted, match=f"at most {MAX_ENDPOINTS} endpoints"):
        await an_endpoint(store)
    assert len(await store.list_endpoints()) == MAX_ENDPOINTS


async def test_racing_creates_never_pass_max_endpoints(store: WebhookStore) -> None:
    for _ in range(MAX_ENDPOINTS - 5):
        await an_endpoint(store)

    outcomes = await asyncio.gather(*(an_endpoint(store) for _ in range(20)), return_exceptions=True)

    assert sum(isinstance(outcome, EndpointRecord) for outcome in outcomes) == 5
    assert all(isinstance(outcome, (EndpointRecord, ResourceExhausted)) for outcome in outcomes)
    assert len(await store.list_endpoints()) == MAX_ENDPOINTS


async def test_accepting_makes_a_delivery_per_endpoint_that_asked_for_the_type(store: WebhookStore) -> None:
    orders = await an_endpoint(store, "order.placed")
    pets = await an_endpoint(store, "pet.sold")
    both = await an_endpoint(store, "order.placed", "pet.sold")
    order_event = an_event("evt_order")
    pet_event = an_event("evt_pet", subject="pet:7", type="pet.sold")

    accepted = await store.accept_events([order_event, pet_event])

    assert (accepted.deliveries, accepted.endpoint_ids) == (4, frozenset({orders.id, pets.id, both.id}))
    assert ids(await store.due_deliveries(orders.id, now=FAR, limit=10)) == ["evt_order"]
    assert ids(await store.due_deliveries(pets.id, now=FAR, limit=10)) == ["evt_pet"]
    assert ids(await store.due_deliveries(both.id, now=FAR, limit=10)) == ["evt_order", "evt_pet"]


async def test_a_delivery_carries_its_event_as_accepted(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store)
    event = an_event("evt_1", sequence=3)
    await store.accept_events([event])

    [delivery] = await store.due_deliveries(endpoint.id, now=FAR, limit=10)

    assert (delivery.endpoint_id, delivery.attempts, delivery.next_attempt_at) == (endpoint.id, 0, None)
    assert delivery.event.time == T0 + timedelta(seconds=3, microseconds=123_000)  # to the millisecond
    assert delivery.event == Event(
        "evt_1",
        "order.placed",
        "order:1",
        3,
        delivery.event.time,
        {"id": 1, "status": "placed", "tags": [{"id": 1, "name": "a"}]},
    )


async def test_accepting_an_event_again_adds_nothing(store: WebhookStore) -> None:
    # The events of a lost acknowledgement are read again: no second delivery.
    endpoint = await an_endpoint(store)
    events = [an_event(f"evt_{n}", subject=f"order:{n}") for n in range(5)]
    await store.accept_events(events[:3])

    again = await store.accept_events(events)

    assert (again.deliveries, again.endpoint_ids) == (2, frozenset({endpoint.id}))
    assert (await store.accept_events(events)).deliveries == 0
    assert ids(await store.due_deliveries(endpoint.id, now=FAR, limit=10)) == [event.id for event in events]


async def test_concurrent_accepts_of_the_same_events_make_each_delivery_once(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store)
    events = [an_event(f"evt_{n}", subject=f"order:{n}") for n in range(20)]

    results = await asyncio.gather(*(store.accept_events(events) for _ in range(4)))

    assert sum(result.deliveries for result in results) == 20
    assert len(await store.due_deliveries(endpoint.id, now=FAR, limit=100)) == 20


async def test_a_delivered_event_read_again_is_not_sent_again(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store)
    event = an_event("evt_1")
    await store.accept_events([event])
    await store.record_attempt(delivered(endpoint.id, event), next_attempt_at=None)

    assert (await store.accept_events([event])).deliveries == 0
    assert await store.due_deliveries(endpoint.id, now=FAR, limit=10) == []
    assert await store.next_due(endpoint.id) is None


async def test_a_disabled_endpoint_keeps_its_deliveries_but_gets_no_new_ones(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store)
    await store.accept_events([an_event("evt_1")])

    await store.disable_endpoint(endpoint.id, "evt_1: 503 after 12 attempts")
    accepted = await store.accept_events([an_event("evt_2", subject="order:2")])

    assert accepted.deliveries == 0
    stored = await store.get_endpoint(endpoint.id)
    assert (stored.state, stored.disabled_reason) == (EndpointState.DISABLED, "evt_1: 503 after 12 attempts")
    assert ids(await store.due_deliveries(endpoint.id, now=FAR, limit=10)) == ["evt_1"]


async def test_only_each_subjects_earliest_pending_delivery_is_due(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store, "order.placed", "order.approved")
    await store.accept_events(
        [
            an_event("a1", subject="order:1", sequence=1),
            an_event("b1", subject="order:2", sequence=1),
            an_event("a2", subject="order:1", sequence=2, type="order.approved"),
        ]
    )
    await store.accept_events(
        [an_event("c1", subject="order:3"), an_event("b2", subject="order:2", sequence=2)]
    )

    assert ids(await store.due_deliveries(endpoint.id, now=FAR, limit=10)) == ["a1", "b1", "c1"]
    assert ids(await store.due_deliveries(endpoint.id, now=FAR, limit=2)) == ["a1", "b1"]


async def test_a_failed_delivery_holds_back_its_subjects_later_events(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store, "order.placed", "order.approved")
    first, later = an_event("a1"), an_event("a2", sequence=2, type="order.approved")
    other = an_event("b1", subject="order:2")
    await store.accept_events([first, later, other])
    now = datetime.now(UTC) + timedelta(seconds=1)
    retry_at = (now + timedelta(minutes=5)).replace(microsecond=0)

    await store.record_attempt(failed(endpoint.id, first), next_attempt_at=retry_at)

    # a2 is pending and would be due at once, but a1 is not delivered yet: it waits.
    assert ids(await store.due_deliveries(endpoint.id, now=now, limit=10)) == ["b1"]
    [retried, _] = await store.due_deliveries(endpoint.id, now=retry_at, limit=10)
    assert (retried.event.id, retried.attempts, retried.next_attempt_at) == ("a1", 1, retry_at)

    await store.record_attempt(delivered(endpoint.id, first, attempt=2), next_attempt_at=None)

    assert ids(await store.due_deliveries(endpoint.id, now=now, limit=10)) == ["a2", "b1"]


async def test_accepted_order_not_sequence_decides_within_a_subject(store: WebhookStore) -> None:
    # An order deleted and created again under its id numbers its events from 1 again: the
    # old order's last event still goes first.
    endpoint = await an_endpoint(store, "order.deleted", "order.placed")
    await store.accept_events([an_event("old3", sequence=3, type="order.deleted")])
    await store.accept_events([an_event("new1", sequence=1)])

    assert ids(await store.due_deliveries(endpoint.id, now=FAR, limit=10)) == ["old3"]


async def test_next_due_is_when_the_earliest_subject_head_may_be_tried(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store, "order.placed", "order.approved")
    assert await store.next_due(endpoint.id) is None
    first, later = an_event("a1"), an_event("a2", sequence=2, type="order.approved")
    before = datetime.now(UTC) - timedelta(seconds=1)
    await store.accept_events([first, later])

    due = await store.next_due(endpoint.id)
    assert due is not None
    assert before <= due <= datetime.now(UTC)  # at once

    retry_at = datetime.now(UTC) + timedelta(hours=1)
    await store.record_attempt(failed(endpoint.id, first), next_attempt_at=retry_at)

    # Not "at once" for a2 behind it: a worker would spin.
    assert await store.next_due(endpoint.id) == retry_at.replace(
        microsecond=retry_at.microsecond // 1000 * 1000
    )


async def test_attempts_are_listed_newest_first_and_only_the_newest_are_kept(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store)
    other = await an_endpoint(store)
    event = an_event("evt_1")
    await store.accept_events([event])
    total = ATTEMPTS_KEPT + 5
    for attempt in range(1, total + 1):
        await store.record_attempt(
            failed(endpoint.id, event, attempt=attempt, at=T0 + timedelta(seconds=attempt)),
            next_attempt_at=T0,
        )

    kept = await store.recent_attempts(endpoint.id, limit=ATTEMPTS_KEPT * 2)

    assert [attempt.attempt for attempt in kept] == list(range(total, 5, -1))
    assert kept[0] == failed(endpoint.id, event, attempt=total, at=T0 + timedelta(seconds=total))
    assert [attempt.attempt for attempt in await store.recent_attempts(endpoint.id, limit=3)] == [
        total,
        total - 1,
        total - 2,
    ]
    assert await store.recent_attempts(other.id, limit=10) == []
    assert await store.recent_attempts(endpoint.id, limit=0) == []


async def test_an_attempt_for_a_deleted_endpoint_is_dropped(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store)
    event = an_event("evt_1")
    await store.accept_events([event])
    await store.delete_endpoint(endpoint.id)

    await store.record_attempt(delivered(endpoint.id, event), next_attempt_at=None)

    assert await store.due_deliveries(endpoint.id, now=FAR, limit=10) == []
    assert await store.next_due(endpoint.id) is None
    with pytest.raises(NotFound):
        await store.recent_attempts(endpoint.id, limit=10)


async def test_deleting_an_endpoint_forgets_its_deliveries_and_attempts(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store)
    kept = await an_endpoint(store)
    event = an_event("evt_1")
    await store.accept_events([event])
    await store.record_attempt(failed(endpoint.id, event), next_attempt_at=T0)

    await store.delete_endpoint(endpoint.id)

    assert await store.list_endpoints() == [kept]
    assert ids(await store.due_deliveries(kept.id, now=FAR, limit=10)) == ["evt_1"]
    assert await store.due_deliveries(endpoint.id, now=FAR, limit=10) == []


async def test_purge_forgets_deliveries_delivered_before_the_bound(store: WebhookStore) -> None:
    endpoint = await an_endpoint(store)
    old, recent, pending = (
        an_event("old", "order:1"),
        an_event("recent", "order:2"),
        an_event("pending", "order:3"),
    )
    await store.accept_events([old, recent, pending])
    await store.record_attempt(delivered(endpoint.id, old, at=T0), next_attempt_at=None)
    await store.record_attempt(
        delivered(endpoint.id, recent, at=T0 + timedelta(hours=2)), next_attempt_at=None
    )

    assert await store.purge(delivered_before=T0 + timedelta(hours=1)) == 1

    assert ids(await store.due_deliveries(endpoint.id, now=FAR, limit=10)) == ["pending"]
    # Past the retention the event is forgotten: read again, it would be a new delivery.
    assert (await store.accept_events([old, recent])).deliveries == 1
    assert await store.purge(delivered_before=T0 + timedelta(hours=1)) == 0
