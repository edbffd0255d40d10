"""The change hub: fan-out in commit order, heartbeats, and losing a subscriber safely."""

from __future__ import annotations

import asyncio

import pytest

from petstore_common.errors import Unavailable
from petstore_pet.changes import ChangeHub, PetChange, Position, SubscriptionLost


async def test_every_subscriber_gets_every_change_in_order_batched() -> None:
    hub = ChangeHub()
    async with hub.subscribe() as first, hub.subscribe() as second:
        for version in (1, 2, 3):
            hub.publish(PetChange(7, version))

        expected = [PetChange(7, 1), PetChange(7, 2), PetChange(7, 3)]
        assert await first.next_batch(1) == expected
        assert await second.next_batch(1) == expected
    assert hub.subscribers == 0


async def test_changes_before_subscribing_are_not_delivered() -> None:
    hub = ChangeHub()
    hub.publish(PetChange(1, 1))
    async with hub.subscribe() as subscription:
        hub.publish(PetChange(2, 1))
        assert await subscription.next_batch(1) == [PetChange(2, 1)]


async def test_a_quiet_feed_gives_an_empty_batch_after_the_wait() -> None:
    hub = ChangeHub()
    async with hub.subscribe() as subscription:
        assert await subscription.next_batch(0.01) == []


async def test_a_subscriber_that_falls_behind_is_lost_not_skipped() -> None:
    hub = ChangeHub(limit=2)
    async with hub.subscribe() as slow:
        for version in (1, 2, 3):
            hub.publish(PetChange(1, version))
        with pytest.raises(SubscriptionLost, match="fell behind"):
            await slow.next_batch(1)


async def test_closing_ends_every_stream_and_refuses_new_ones() -> None:
    hub = ChangeHub()
    async with hub.subscribe() as subscription:
        hub.publish(PetChange(1, 1))  # queued, but the stream is lost all the same
        await hub.close()
        with pytest.raises(SubscriptionLost, match="stopping"):
            await subscription.next_batch(1)
    with pytest.raises(Unavailable, match="stopping"):
        async with hub.subscribe():
            pass


async def test_a_resumed_subscription_replays_the_kept_changes_after_its_position() -> None:
    hub = ChangeHub(retained=3)
    hub.publish(PetChange(1, 1))
    start = hub.position
    for pet_id in (2, 3):
        hub.publish(PetChange(pet_id, 1))
    async with hub.subscribe(start) as subscription:
        assert subscription.resumed
        assert [c.pet_id for c in subscription.drain()] == [2, 3]
        assert subscription.sequence == hub.position.sequence


async def test_changes_no_longer_kept_or_another_epoch_cannot_be_resumed() -> None:
    hub = ChangeHub(retained=2)
    start = hub.position
    for pet_id in (1, 2, 3):
        hub.publish(PetChange(pet_id, 1))
    async with hub.subscribe(start) as too_old:  # change 1 is gone: resuming would skip it
        assert not too_old.resumed
        assert too_old.drain() == []
    async with hub.subscribe(Position("elsewhere", 3)) as other:
        assert not other.resumed
    latest = hub.position
    hub.new_epoch()  # the feed's source restarted: it may have missed changes
    async with hub.subscribe(latest) as after_gap:
        assert not after_gap.resumed


async def test_a_cancelled_wait_stays_cancelled_when_a_change_comes_in_the_same_turn() -> None:
    hub = ChangeHub()
    async with hub.subscribe() as subscription:
        waiting = asyncio.create_task(subscription.next_batch(30))
        await asyncio.sleep(0)  # now waiting for a change
        hub.publish(PetChange(1, 1))
        waiting.cancel()  # a stream ending as the change arrives must end, not carry on
        with pytest.raises(asyncio.CancelledError):
            await waiting
