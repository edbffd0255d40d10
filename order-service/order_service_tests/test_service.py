"""The service factory: store choice, indexes, readiness, the pet channel, and closing both."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import grpc
import pytest
from pymongo import AsyncMongoClient

from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import ORDER_SERVICE
from petstore_common.caller_testing import KEYS, signed_channel
from petstore_common.grpc_server import start_service
from petstore_order.service import SERVICE_NAME, order_service
from petstore_order.settings import OrderSettings
from petstore_order.storage.documents import Document

from .pet_backend import PetBackend, closed_address, local_settings

STAFF = callers.staff()

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub


def settings(**env: str) -> OrderSettings:
    return OrderSettings.from_env(
        env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", "CALLER_SIGNING_KEY": KEYS[ORDER_SERVICE].seed, **env}
    )


@asynccontextmanager
async def served(order_settings: OrderSettings) -> AsyncIterator[OrderServiceAsyncStub]:
    """The factory's service on a real server, and a stub to call it."""
    async with order_service(order_settings) as definition:
        running = await start_service(definition, local_settings())
        try:
            async with signed_channel(f"127.0.0.1:{running.port}") as channel:
                yield order_service_pb2_grpc.OrderServiceStub(channel)
        finally:
            await running.stop(None)


async def test_without_a_uri_the_service_runs_in_memory() -> None:
    # Ready although no pet service answers: readiness is the store's alone.
    async with order_service(settings(PET_SERVICE_ADDR=closed_address())) as definition:
        assert definition.name == SERVICE_NAME
        await definition.check_ready()


async def test_the_service_asks_the_configured_pet_service(pets: PetBackend) -> None:
    pet_id = await pets.add_pet()

    async with served(settings(PET_SERVICE_ADDR=pets.address)) as stub:
        created = await stub.CreateOrder(
            order_service_pb2.CreateOrderRequest(
                caller=STAFF, order=order_pb2.Order(pet_id=pet_id, quantity=1)
            ),
            timeout=5,
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CreateOrder(
                order_service_pb2.CreateOrderRequest(
                    caller=STAFF, order=order_pb2.Order(pet_id=pet_id + 1, quantity=1)
                ),
                timeout=5,
            )

    assert created.order.id == 1
    assert (caught.value.code(), caught.value.details()) == (
        grpc.StatusCode.NOT_FOUND,
        f"pet {pet_id + 1} not found",
    )


@pytest.mark.mongo
async def test_with_a_uri_the_service_indexes_and_uses_its_database(
    mongodb_uri: str, mongo_database: str, pets: PetBackend
) -> None:
    pet_id = await pets.add_pet()
    order_settings = settings(
        MONGODB_URI=mongodb_uri, MONGODB_DATABASE=mongo_database, PET_SERVICE_ADDR=pets.address
    )

    async with order_service(order_settings) as definition:
        await definition.check_ready()
    async with served(order_settings) as stub:
        response = await stub.CreateOrder(
            order_service_pb2.CreateOrderRequest(
                caller=STAFF, order=order_pb2.Order(pet_id=pet_id, quantity=4)
            ),
            timeout=5,
        )

    client: AsyncMongoClient[Document] = AsyncMongoClient(mongodb_uri)
    try:
        orders = client[mongo_database]["orders"]
        indexes = await orders.index_information()
        stored = await orders.find_one({"_id": response.order.id})
    finally:
        await client.close()
    assert sorted(tuple(key for key, _ in index["key"]) for index in indexes.values()) == [
        ("_id",),
        ("has_events",),
        ("owner_user_id", "status", "_id"),
        ("pet_id",),
        ("sale_step_at",),
        ("status", "_id"),
    ]
    assert stored is not None
    order_document = {
        "_id": response.order.id,
        "pet_id": pet_id,
        "quantity": 4,
        "status": "placed",
        "complete": False,
    }
    [placed] = stored.pop("events")
    assert stored == order_document | {"has_events": True, "events_seq": 1, "events_version": 1}
    assert (placed["type"], placed["sequence"], placed["order"]) == ("placed", 1, order_document)


async def test_an_unreachable_database_starts_not_ready(tmp_path: Path) -> None:
    # A Unix socket that does not exist: refused at once. (A TCP connect to a closed port
    # can be cancelled mid-flight by close(), and PyMongo 4.20 then leaks its socket.)
    missing = quote(str(tmp_path / "no-such-mongod.sock"), safe="")
    unreachable = settings(MONGODB_URI=f"mongodb://{missing}/", MONGODB_TIMEOUT_MS="100")

    async with order_service(unreachable) as definition:
        with pytest.raises(Exception, match=r"no-such-mongod\.sock"):
            await definition.check_ready()
