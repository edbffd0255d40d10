"""What only the MongoDB store can meet: a batch that loses a race after its checks passed."""

from __future__ import annotations

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from petstore.user.v1 import user_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_user.storage.base import Account
from petstore_user.storage.documents import Document
from petstore_user.storage.mongo import MongoUserStore

pytestmark = pytest.mark.mongo

HASH = "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"


class RacedStore(MongoUserStore):
    """Another client takes the username `cat` just before this store inserts it."""

    raced = False

    async def create(self, account: Account) -> user_pb2.User:
        if account.user.username == "cat" and not self.raced:
            self.raced = True
            await super().create(Account(user_pb2.User(username="cat", first_name="winner"), HASH))
        return await super().create(account)


@pytest.fixture
async def store(mongo_db: AsyncDatabase[Document]) -> RacedStore:
    store = RacedStore(mongo_db)
    await store.ensure_indexes()
    return store


async def test_a_batch_that_loses_a_race_midway_undoes_what_it_stored(store: RacedStore) -> None:
    batch = [Account(user_pb2.User(username=name), HASH) for name in ("ann", "bob", "cat", "dan")]

    with pytest.raises(AlreadyExists, match=r"^users\[2\]: username cat is taken$"):
        await store.create_many(batch)

    assert store.raced
    assert (await store.get("cat")).first_name == "winner"
    for name in ("ann", "bob", "dan"):
        with pytest.raises(NotFound):
            await store.get(name)


async def test_accounts_stored_before_usernames_had_keys_get_them_at_startup(
    mongo_db: AsyncDatabase[Document], caplog: pytest.LogCaptureFixture
) -> None:
    """Old documents have no username_key; two of them may differ only in case. Startup keys
    them all without failing, and both twins stay reachable by their exact names."""
    users = mongo_db["users"]
    for user_id, name in ((1, "bob"), (2, "Bob"), (3, "Cat")):
        document = {
            "_id": user_id,
            "username": name,
            "email": f"{user_id}@example.com",
            "password_hash": HASH,
        }
        await users.insert_one(document)

    store = MongoUserStore(mongo_db)
    await store.ensure_indexes()
    await store.ensure_indexes()  # idempotent

    assert (await store.get("bob")).id == 1
    assert (await store.get("Bob")).id == 2  # the exact name first
    assert (await store.get("BOB")).id == 1  # else the key's owner
    assert (await store.get("cat")).id == 3
    assert "usernames differ only in case: user 1 keeps the name's key, user 2" in caplog.text
    with pytest.raises(AlreadyExists, match=r"^username CAT is taken$"):
        await store.create(Account(user_pb2.User(username="CAT"), HASH))
    # The twin edits its profile and keeps its name.
    edited = await store.update(2, "Bob", user_pb2.User(username="Bob", first_name="Robert"), None)
    assert (await store.get("Bob")).first_name == edited.first_name == "Robert"
