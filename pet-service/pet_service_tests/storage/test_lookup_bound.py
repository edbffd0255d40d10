"""One FindExistingPets call about many pets never takes the whole connection pool: its look-ups
(one `_id` equality each, for FerretDB's sake) go at most LOOKUPS_AT_ONCE at a time, as the
database sees them (a command listener on the store's own client)."""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import AsyncMongoClient, monitoring

from petstore_pet.storage.mongo import LOOKUPS_AT_ONCE, MongoPetStore

pytestmark = pytest.mark.mongo


class InFlightFinds(monitoring.CommandListener):
    """The most `find` commands the client had started and not yet seen answered."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.count = 0

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "find":
            self.now += 1
            self.count += 1
            self.most = max(self.most, self.now)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if event.command_name == "find":
            self.now -= 1

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        if event.command_name == "find":
            self.now -= 1


async def test_a_question_about_many_pets_keeps_to_the_bound(mongodb_uri: str, mongo_database: str) -> None:
    finds = InFlightFinds()
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        mongodb_uri, tz_aware=True, maxPoolSize=100, event_listeners=[finds]
    )
    try:
        store = MongoPetStore(client[mongo_database])
        asked = list(range(1, 201))
        assert await store.existing(asked) == set()
    finally:
        await client.close()
    assert finds.count == len(asked)
    # Without the bound all 200 go at once (the pool of 100 allows that many).
    assert 1 < finds.most <= LOOKUPS_AT_ONCE
