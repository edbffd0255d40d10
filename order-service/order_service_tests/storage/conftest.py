"""The store fixtures of the storage contract tests: every test here runs on both stores."""

from __future__ import annotations

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from petstore_order.storage.base import OrderStore
from petstore_order.storage.documents import Document
from petstore_order.storage.memory import MemoryOrderStore
from petstore_order.storage.mongo import MongoOrderStore


@pytest.fixture
def memory_store() -> MemoryOrderStore:
    return MemoryOrderStore()


@pytest.fixture
async def mongo_store(mongo_db: AsyncDatabase[Document]) -> MongoOrderStore:
    store = MongoOrderStore(mongo_db)
    await store.ensure_indexes()
    return store


@pytest.fixture(params=["memory", pytest.param("mongo", marks=pytest.mark.mongo)])
def store(request: pytest.FixtureRequest) -> OrderStore:
    implementation: OrderStore = request.getfixturevalue(f"{request.param}_store")
    return implementation
