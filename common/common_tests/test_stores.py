"""open_store and StoreReadiness with a stand-in store (the services test their real ones)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from petstore_common.mongo import Document
from petstore_common.settings import ServiceSettings
from petstore_common.stores import StoreReadiness, open_store


class CountingStore:
    def __init__(self, database: AsyncDatabase[Document] | None = None) -> None:
        self.database = database
        self.index_calls = 0
        self.reachable = True

    async def ping(self) -> None:
        if self.database is not None:
            await self.database.client.admin.command("ping")
        if not self.reachable:
            raise ConnectionError("gone")

    async def ensure_indexes(self) -> None:
        await self.ping()
        self.index_calls += 1


def settings(**env: str) -> ServiceSettings:
    return ServiceSettings.from_env(default_port=0, default_database="petstore_test", env=env)


async def test_without_a_uri_the_memory_store_is_used() -> None:
    async with open_store(settings(), memory=CountingStore, mongo=CountingStore) as (store, readiness):
        assert store.database is None
        await readiness.check()
        assert store.index_calls == 0  # nothing to index in memory


@pytest.mark.mongo
async def test_with_a_uri_the_mongo_store_gets_its_own_database_indexed(
    mongodb_uri: str, mongo_database: str
) -> None:
    chosen = settings(MONGODB_URI=mongodb_uri, MONGODB_DATABASE=mongo_database)
    async with open_store(chosen, memory=CountingStore, mongo=CountingStore) as (store, readiness):
        assert store.database is not None
        assert store.database.name == mongo_database
        assert store.index_calls == 1
        await readiness.check()
        assert store.index_calls == 1


async def test_an_unreachable_database_is_not_ready_but_does_not_stop_start_up(tmp_path: Path) -> None:
    missing = quote(str(tmp_path / "no-such-mongod.sock"), safe="")
    unreachable = settings(MONGODB_URI=f"mongodb://{missing}/", MONGODB_TIMEOUT_MS="100")
    async with open_store(unreachable, memory=CountingStore, mongo=CountingStore) as (store, readiness):
        assert store.index_calls == 0
        with pytest.raises(Exception, match=r"no-such-mongod\.sock"):
            await readiness.check()


async def test_readiness_creates_the_indexes_missed_at_start_up() -> None:
    store = CountingStore()
    store.reachable = False
    readiness = StoreReadiness(store, indexed=False)
    with pytest.raises(ConnectionError):
        await readiness.check()
    store.reachable = True
    await readiness.check()
    await readiness.check()
    assert store.index_calls == 1
