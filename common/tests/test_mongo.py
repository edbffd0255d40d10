"""The id allocation helpers against a real MongoDB-wire server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.errors import DuplicateKeyError

from petstore_common.mongo import Document, IdAllocator, insert_with_new_id, next_id

pytestmark = pytest.mark.mongo


@pytest.fixture
async def db(mongodb_uri: str, mongo_database: str) -> AsyncIterator[Any]:
    client: AsyncMongoClient[Document] = AsyncMongoClient(mongodb_uri, serverSelectionTimeoutMS=3000)
    try:
        yield client[mongo_database]
    finally:
        await client.close()


async def test_counter_counts_from_one(db: Any) -> None:
    assert [await next_id(db.counters, "things") for _ in range(3)] == [1, 2, 3]


async def test_a_counter_steps_by_a_block(db: Any) -> None:
    assert [await next_id(db.counters, "things", step=16) for _ in range(2)] == [16, 32]


async def test_one_process_hands_out_a_block_before_drawing_again(db: Any) -> None:
    ids = IdAllocator(db.counters, "things", block_size=4)
    assert [await ids.next() for _ in range(6)] == [1, 2, 3, 4, 5, 6]
    assert (await db.counters.find_one({"_id": "things"}))["value"] == 8  # two draws for six ids


async def test_concurrent_inserts_get_distinct_ids(db: Any) -> None:
    ids = IdAllocator(db.counters, "things")
    docs = await asyncio.gather(
        *(insert_with_new_id(db.things, ids, lambda i: {"_id": i}) for _ in range(40))
    )
    assert len({doc["_id"] for doc in docs}) == 40
    assert await db.things.count_documents({}) == 40


async def test_processes_drawing_the_same_block_still_get_distinct_ids(db: Any) -> None:
    # Two allocators over one counter stand for two replicas; on FerretDB their draws can
    # even return the same block. The unique _id index sorts it out.
    replicas = [IdAllocator(db.counters, "things", block_size=4) for _ in range(2)]
    docs = await asyncio.gather(
        *(insert_with_new_id(db.things, replicas[n % 2], lambda i: {"_id": i}) for n in range(30))
    )
    assert len({doc["_id"] for doc in docs}) == 30
    assert await db.things.count_documents({}) == 30


async def test_allocation_skips_ids_that_clients_chose(db: Any) -> None:
    await db.things.insert_many([{"_id": 1, "by": "client"}, {"_id": 2, "by": "client"}])
    doc = await insert_with_new_id(
        db.things, IdAllocator(db.counters, "things"), lambda i: {"_id": i, "by": "server"}
    )
    assert doc["_id"] == 3  # the next free id of the block
    assert await db.things.find_one({"_id": 1}) == {"_id": 1, "by": "client"}


async def test_a_conflict_on_another_unique_index_is_raised(db: Any) -> None:
    await db.users.create_index("username", unique=True)
    await db.users.insert_one({"_id": 100, "username": "alice"})
    with pytest.raises(DuplicateKeyError):
        await insert_with_new_id(
            db.users, IdAllocator(db.counters, "users"), lambda i: {"_id": i, "username": "alice"}
        )
    assert await db.users.count_documents({}) == 1
