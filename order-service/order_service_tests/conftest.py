"""Fixtures the order service's servicer tests share: the pet service it asks (a double checked
against the real one: test_pet_directory_contract.py) and an embedded order store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from petstore_order.storage.memory import MemoryOrderStore

from .pet_backend import PetBackend, pet_backend


@pytest.fixture
async def pets() -> AsyncIterator[PetBackend]:
    async with pet_backend() as backend:
        yield backend


@pytest.fixture
def store() -> MemoryOrderStore:
    return MemoryOrderStore()
