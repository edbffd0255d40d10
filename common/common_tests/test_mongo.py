"""The storage helpers every service's Mongo store uses (ids, inserts, versioned updates),
against a real MongoDB-wire server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.errors import DuplicateKeyError

from petstore_common.errors import Aborted, AlreadyExists, FailedPrecondition, NotFound
from petstore_common.mongo import (
    MAX_UPDATE_ATTEMPTS,
    Document,
    IdAllocator,
    insert_with_new_id,
    insert_with_optional_id,
    next_id,
    update_versioned,
)

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


def taken() -> AlreadyExists:
    return AlreadyExists("taken")


def gone() -> NotFound:
    return NotFound("gone")


async def test_an_insert_keeps_the_id_the_client_chose_and_refuses_a_taken_one(db: Any) -> None:
    ids = IdAllocator(db.counters, "things")
    assert (await insert_with_optional_id(db.things, ids, {"_id": 7, "a": 1}, taken))["_id"] == 7
    with pytest.raises(AlreadyExists, match="taken"):
        await insert_with_optional_id(db.things, ids, {"_id": 7, "a": 2}, taken)
    fresh = await insert_with_optional_id(db.things, ids, {"a": 3}, taken)
    assert fresh["_id"] != 7
    assert await db.things.count_documents({}) == 2


async def test_a_versioned_update_bumps_the_version_and_checks_if_match(db: Any) -> None:
    await db.things.insert_one({"_id": 1, "a": 1})  # written before versions existed: version 0
    stored, version = await update_versioned(
        db.things, {"_id": 1}, lambda _s: {"$set": {"a": 2}}, missing=gone, what="thing 1"
    )
    assert (stored["a"], version) == (1, 1)
    assert await db.things.find_one({"_id": 1}) == {"_id": 1, "a": 2, "version": 1}
    with pytest.raises(FailedPrecondition):
        await update_versioned(
            db.things,
            {"_id": 1},
            lambda _s: {"$set": {"a": 3}},
            missing=gone,
            what="thing 1",
            accepted_versions={0},
        )
    with pytest.raises(NotFound, match="gone"):
        await update_versioned(
            db.things,
            {"_id": 2},
            lambda _s: {"$set": {"a": 3}},
            missing=gone,
            what="thing 2",
        )


def interfering(collection: Any, rounds: int) -> Any:
    """`collection`, whose find_one lets another writer in right after each of the first
    `rounds` reads (so the conditional write that follows finds the document changed)."""
    read = collection.find_one
    left = rounds

    async def find_one(query: Document) -> Document | None:
        nonlocal left
        found: Document | None = await read(query)
        if left:
            left -= 1
            await collection.update_one({"_id": query["_id"]}, {"$inc": {"n": 10, "version": 1}})
        return found

    collection.find_one = find_one
    return collection


async def test_a_write_in_between_costs_a_round_never_a_lost_update(db: Any) -> None:
    things = interfering(db.things, rounds=1)
    await things.insert_one({"_id": 1, "n": 0, "version": 1})
    stored, version = await update_versioned(
        things,
        {"_id": 1},
        lambda read: {"$set": {"n": read["n"] + 1}},
        missing=gone,
        what="thing 1",
    )
    assert (stored["n"], version) == (10, 3)  # the second round read the other writer's 10
    assert await db.things.find_one({"_id": 1}) == {"_id": 1, "n": 11, "version": 3}


async def test_a_document_always_written_in_between_gives_up_with_aborted(db: Any) -> None:
    things = interfering(db.things, rounds=MAX_UPDATE_ATTEMPTS)
    await things.insert_one({"_id": 1, "n": 0, "version": 1})
    with pytest.raises(Aborted, match="thing 1 is being changed by others"):
        await update_versioned(
            things,
            {"_id": 1},
            lambda read: {"$set": {"n": -1}},
            missing=gone,
            what="thing 1",
        )
    assert (await db.things.find_one({"_id": 1}))["n"] == 10 * MAX_UPDATE_ATTEMPTS  # never -1
