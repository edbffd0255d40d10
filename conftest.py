"""Fixtures every test folder shares: a real MongoDB-wire server when one is given."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase


@pytest.fixture(scope="session")
def mongodb_uri() -> str:
    """MONGODB_URI (make test starts FerretDB and sets it). Under CI its absence is a failure."""
    uri = os.environ.get("MONGODB_URI", "")
    if not uri:
        if os.environ.get("CI"):
            pytest.fail("MONGODB_URI is not set under CI: the MongoDB-backed tests must run")
        pytest.skip("MONGODB_URI is not set: run `make test`, which starts FerretDB")
    return uri


@pytest.fixture
async def mongo_database(mongodb_uri: str) -> AsyncIterator[str]:
    """A fresh database name, dropped after the test."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    yield name
    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(mongodb_uri)
    try:
        await client.drop_database(name)
    finally:
        await client.close()


@pytest.fixture
async def mongo_db(mongodb_uri: str, mongo_database: str) -> AsyncIterator[AsyncDatabase[dict[str, Any]]]:
    """That fresh database through a client set up as the services' (tz-aware datetimes)."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        mongodb_uri, serverSelectionTimeoutMS=3000, tz_aware=True
    )
    try:
        yield client[mongo_database]
    finally:
        await client.close()
