"""The service factory: store choice, indexes, readiness, and the relay running beside the API."""

from __future__ import annotations

import pytest
from pymongo import AsyncMongoClient

from petstore_common.caller_gate import WEBHOOK_SERVICE
from petstore_common.caller_testing import KEYS
from petstore_webhook.service import SERVICE_NAME, webhook_service
from petstore_webhook.settings import WebhookSettings
from petstore_webhook.storage.documents import Document


def settings(**env: str) -> WebhookSettings:
    return WebhookSettings.from_env(
        env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", "CALLER_SIGNING_KEY": KEYS[WEBHOOK_SERVICE].seed, **env}
    )


async def test_without_a_uri_the_service_runs_in_memory_with_its_relay() -> None:
    async with webhook_service(settings()) as definition:
        assert definition.name == SERVICE_NAME
        await definition.check_ready()
        assert definition.background is not None  # the relay: started with the server


@pytest.mark.mongo
async def test_with_a_uri_the_indexes_are_created_at_start(mongodb_uri: str, mongo_database: str) -> None:
    async with webhook_service(
        settings(MONGODB_URI=mongodb_uri, MONGODB_DATABASE=mongo_database)
    ) as definition:
        await definition.check_ready()

    client: AsyncMongoClient[Document] = AsyncMongoClient(mongodb_uri)
    try:
        deliveries = [
            index["key"] async for index in await client[mongo_database]["deliveries"].list_indexes()
        ]
        attempts = [index["key"] async for index in await client[mongo_database]["attempts"].list_indexes()]
    finally:
        await client.close()
    assert {"endpoint_id": 1, "state": 1, "received": 1} in [dict(key) for key in deliveries]
    assert {"endpoint_id": 1, "_id": -1} in [dict(key) for key in attempts]
