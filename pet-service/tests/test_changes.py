"""The change hub: fan-out in commit order, heartbeats, and losing a subscriber safely."""

from __future__ import annotations

import pytest

from petstore_common.errors import Unavailable
from petstore_pet.changes import ChangeHub, PetChange, SubscriptionLost


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
