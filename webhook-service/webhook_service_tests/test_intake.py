"""Intake keeps before it acknowledges: an outbox never forgets an event the store does not
hold, and an event read again (its acknowledgement lost) makes no second delivery."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import pytest

from petstore_webhook.intake import MAX_ERROR_WAIT_SECONDS, Intake
from petstore_webhook.sources import EventPage, SourceUnavailable
from petstore_webhook.storage.base import Accepted, Event
from petstore_webhook.storage.memory import MemoryWebhookStore


def event(order_id: int, sequence: int) -> Event:
    return Event(
        id=f"evt_{order_id}_{sequence}",
        type="order.placed",
        subject=f"order:{order_id}",
        sequence=sequence,
        time=datetime(2026, 5, 1, tzinfo=UTC),
        data={"id": order_id},
    )


class Outbox:
    """An event source as the order service keeps it: each document's events until acknowledged,
    oldest documents first, `page_size` documents a read."""

    name = "order"

    def __init__(self, events: Iterable[Event], *, page_size: int = 2) -> None:
        self.documents: dict[int, list[Event]] = {}
        for item in events:
            self.documents.setdefault(int(item.subject.split(":")[1]), []).append(item)
        self.page_size = page_size
        self.reads = 0
        self.acks: list[dict[int, int]] = []
        self.lose_acks = 0
        """Acknowledgements to fail (UNAVAILABLE) before one gets through."""

    async def read(self) -> EventPage:
        self.reads += 1
        chosen = list(self.documents.items())[: self.page_size]
        events = tuple(item for _, kept in chosen for item in kept)
        through = {document_id: kept[-1].sequence for document_id, kept in chosen}
        return EventPage(events, through, full=len(chosen) >= self.page_size)

    async def acknowledge(self, page: EventPage) -> None:
        if self.lose_acks:
            self.lose_acks -= 1
            raise SourceUnavailable("order service: UNAVAILABLE")
        self.acks.append(dict(page.through))
        for document_id, through in page.through.items():
            left = [item for item in self.documents.get(document_id, []) if item.sequence > through]
            if left:
                self.documents[document_id] = left
            else:
                self.documents.pop(document_id, None)

    def pending(self) -> list[str]:
        return [item.id for kept in self.documents.values() for item in kept]


class FailingStore(MemoryWebhookStore):
    """Loses its connection on accept_events while `failing`."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = True

    async def accept_events(self, events: Sequence[Event]) -> Accepted:
        if self.failing:
            raise ConnectionError("the webhook database is unreachable")
        return await super().accept_events(events)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def subscribe(store: MemoryWebhookStore) -> int:
    endpoint = await store.create_endpoint(
        url="https://hooks.example.com/",
        event_types=("order.placed",),
        secret="whsec_eA==",
        at=datetime.now(UTC),
    )
    return endpoint.id


async def test_nothing_is_acknowledged_that_the_store_failed_to_keep() -> None:
    store = FailingStore()
    endpoint_id = await subscribe(store)
    outbox = Outbox([event(1, 1), event(1, 2), event(2, 1)])
    clock = Clock()
    intake = Intake(store, [outbox], poll_seconds=0.01, clock=clock)

    more, failed = await intake.run_pass()

    assert (more, failed) == (False, True)
    assert outbox.acks == []  # the outbox still holds every event
    assert outbox.pending() == ["evt_1_1", "evt_1_2", "evt_2_1"]

    store.failing = False
    clock.now += intake.wait_seconds(1)
    assert await intake.run_pass() == (False, False)
    assert outbox.pending() == []
    due = await store.due_deliveries(endpoint_id, now=datetime.now(UTC), limit=10)
    assert [delivery.event.id for delivery in due] == ["evt_1_1", "evt_2_1"]  # each subject's first


async def test_a_re_read_after_a_lost_acknowledgement_makes_no_second_delivery() -> None:
    store = MemoryWebhookStore()
    endpoint_id = await subscribe(store)
    outbox = Outbox([event(1, 1), event(2, 1)], page_size=10)
    outbox.lose_acks = 1  # kept, then the acknowledgement is lost: the same events come again
    woken: list[set[int]] = []
    clock = Clock()
    intake = Intake(store, [outbox], poll_seconds=0.01, wake=lambda ids: woken.append(set(ids)), clock=clock)

    assert await intake.run_pass() == (False, True)
    assert outbox.pending() == ["evt_1_1", "evt_2_1"]
    clock.now += intake.wait_seconds(1)
    assert await intake.run_pass() == (False, False)

    assert outbox.pending() == []
    assert outbox.reads == 2
    assert woken == [{endpoint_id}]  # the second read added nothing to wake anyone for
    due = await store.due_deliveries(endpoint_id, now=datetime.now(UTC), limit=10)
    assert sorted(delivery.event.id for delivery in due) == ["evt_1_1", "evt_2_1"]
    assert len(due) == 2
    again = await store.accept_events([event(1, 1), event(2, 1)])
    assert again.deliveries == 0


async def test_full_pages_are_read_on_in_the_same_pass() -> None:
    store = MemoryWebhookStore()
    await subscribe(store)
    outbox = Outbox([event(order_id, 1) for order_id in range(1, 6)], page_size=2)
    intake = Intake(store, [outbox], poll_seconds=0.01)

    assert await intake.run_pass() == (False, False)

    assert outbox.reads == 3  # 2 + 2 full, then 1: the pass ends
    assert [sorted(ack) for ack in outbox.acks] == [[1, 2], [3, 4], [5]]


async def test_one_source_failing_does_not_stop_the_other() -> None:
    class Down:
        name = "pet"

        async def read(self) -> EventPage:
            raise SourceUnavailable("pet service: UNAVAILABLE")

        async def acknowledge(self, page: EventPage) -> None:
            raise AssertionError("nothing was read")

    store = MemoryWebhookStore()
    await subscribe(store)
    outbox = Outbox([event(1, 1)])
    intake = Intake(store, [Down(), outbox], poll_seconds=0.01)

    assert await intake.run_pass() == (False, True)
    assert outbox.pending() == []


async def test_a_failing_source_is_backed_off_alone() -> None:
    class Down:
        name = "pet"
        reads = 0

        async def read(self) -> EventPage:
            self.reads += 1
            raise SourceUnavailable("pet service: DEADLINE_EXCEEDED")

        async def acknowledge(self, page: EventPage) -> None:
            raise AssertionError("nothing was read")

    store = MemoryWebhookStore()
    await subscribe(store)
    down, outbox = Down(), Outbox([])
    clock = Clock()
    intake = Intake(store, [down, outbox], poll_seconds=1.0, clock=clock)

    for failures in range(3):  # three failures in a row: the next try is 8 s away
        clock.now += intake.wait_seconds(failures) if failures else 0.0
        await intake.run_pass()
    assert down.reads == 3
    assert intake.wait_seconds(3) == 8.0
    reads_before = outbox.reads
    for _ in range(7):  # the poll interval passes seven times: the healthy source is read each
        clock.now += 1.0
        outbox.documents[int(clock.now)] = [event(int(clock.now), 1)]
        assert await intake.run_pass() == (False, False)
    assert outbox.reads == reads_before + 7
    assert outbox.pending() == []
    assert down.reads == 3
    clock.now += 1.0
    assert await intake.run_pass() == (False, True)
    assert down.reads == 4


async def test_run_forever_takes_events_as_they_come() -> None:
    store = MemoryWebhookStore()
    endpoint_id = await subscribe(store)
    outbox = Outbox([])
    intake = Intake(store, [outbox], poll_seconds=0.01)
    task = asyncio.create_task(intake.run_forever())
    try:
        await asyncio.sleep(0.05)
        outbox.documents[7] = [event(7, 1)]
        async with asyncio.timeout(5):
            while outbox.pending():  # noqa: ASYNC110 (the fake outbox's state, polled)
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
    assert await store.next_due(endpoint_id) is not None


@pytest.mark.parametrize(("failures", "wait"), [(0, 1.0), (1, 2.0), (3, 8.0), (6, 60.0), (10_000, 60.0)])
def test_failed_passes_back_off_up_to_a_bound(failures: int, wait: float) -> None:
    assert MAX_ERROR_WAIT_SECONDS == 60.0
    intake = Intake(MemoryWebhookStore(), [], poll_seconds=1.0)
    assert intake.wait_seconds(failures) == wait
