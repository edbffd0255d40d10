"""The service factory: store choice, indexes, readiness, and closing the client."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from pymongo import AsyncMongoClient

from petstore_common.settings import ServiceSettings
from petstore_pet.service import SERVICE_NAME, pet_service
from petstore_pet.settings import PetSettings
from petstore_pet.storage.documents import Document


def settings(**env: str) -> PetSettings:
    return PetSettings(ServiceSettings.from_env(default_port=0, default_database="petstore_pet", env=env))


async def test_without_a_uri_the_service_runs_in_memory() -> None:
    async with pet_service(settings()) as definition:
        assert definition.name == SERVICE_NAME
        await definition.check_ready()


@pytest.mark.mongo
async def test_with_a_uri_the_service_indexes_its_database(mongodb_uri: str, mongo_database: str) -> None:
    async with pet_service(settings(MONGODB_URI=mongodb_uri, MONGODB_DATABASE=mongo_database)) as definition:
        await definition.check_ready()

    client: AsyncMongoClient[Document] = AsyncMongoClient(mongodb_uri)
    try:
        pets = await client[mongo_database]["pets"].index_information()
        images = await client[mongo_database]["pet_images"].index_information()
    finally:
        await client.close()
    indexed = sorted(key for index in pets.values() for key, _ in index["key"])
    assert indexed == ["_id", "has_events", "status", "tags.name"]
    assert [key for index in images.values() for key, _ in index["key"]] == ["_id", "pet_id"]


async def test_an_unreachable_database_starts_not_ready(tmp_path: Path) -> None:
    # A Unix socket that does not exist: refused at once. (A TCP connect to a closed port
    # can be cancelled mid-flight by close(), and PyMongo 4.20 then leaks its socket.)
    missing = quote(str(tmp_path / "no-such-mongod.sock"), safe="")
    unreachable = settings(MONGODB_URI=f"mongodb://{missing}/", MONGODB_TIMEOUT_MS="100")

    async with pet_service(unreachable) as definition:
        with pytest.raises(Exception, match=r"no-such-mongod\.sock"):
            await definition.check_ready()
