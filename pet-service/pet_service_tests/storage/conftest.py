"""The two stores every contract test runs against: the embedded one and the MongoDB one."""

from __future__ import annotations

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from petstore_pet.storage.base import PetStore
from petstore_pet.storage.documents import Document
from petstore_pet.storage.memory import MemoryPetStore
from petstore_pet.storage.mongo import MongoPetStore


@pytest.fixture
def memory_store() -> MemoryPetStore:
    return MemoryPetStore()


@pytest.fixture
async def mongo_store(mongo_db: AsyncDatabase[Document]) -> MongoPetStore:
    store = MongoPetStore(mongo_db)
    await store.ensure_indexes()
    return store


@pytest.fixture(params=["memory", pytest.param("mongo", marks=pytest.mark.mongo)])
def store(request: pytest.FixtureRequest) -> PetStore:
    implementation: PetStore = request.getfixturevalue(f"{request.param}_store")
    return implementation
