"""A pet is sold once, raced: 50 customers order 10 available pets at once, through the gateway.
Exactly 10 orders are placed, the 40 others are 409 naming the pet's state, a retry of a placed
order replays it, and the invariants hold in both databases (tests/sale_invariants.py).

Twice: on the embedded stores (the services and the gateway in this process, over real gRPC and
HTTP on loopback), and as processes on the MongoDB-wire server (MONGODB_URI)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, ClientTimeout
from aiohttp.test_utils import TestServer
from pymongo import AsyncMongoClient

from petstore_devstack.inprocess import in_process_stack
from petstore_devstack.stack import Stack
from petstore_gateway.app import create_app
from petstore_gateway.clients import ServiceClients
from petstore_gateway.settings import GatewaySettings
from petstore_order.storage.base import OrderStore
from petstore_order.storage.mongo import MongoOrderStore
from petstore_pet.storage.base import PetStore
from petstore_pet.storage.mongo import MongoPetStore
from tests.sale_customers import RACE_ENV, Shop
from tests.sale_invariants import snapshot, violations

STAFF_KEY = "race-static-key-0123456789"
SECRET = "race-session-secret-0123456789abcdef"
PETS, CUSTOMERS = 10, 50


@asynccontextmanager
async def embedded_shop() -> AsyncIterator[tuple[str, PetStore, OrderStore]]:
    async with in_process_stack(SECRET) as stack:
        settings = GatewaySettings.from_env(
            {
                **RACE_ENV,
                "PETSTORE_SESSION_SECRET": SECRET,
                "PETSTORE_API_KEYS": STAFF_KEY,
                "PET_SERVICE_ADDR": stack.pet.address,
                "ORDER_SERVICE_ADDR": stack.order.address,
                "USER_SERVICE_ADDR": stack.user.address,
            }
        )
        clients = ServiceClients.connect(
            pet_addr=stack.pet.address,
            order_addr=stack.order.address,
            user_addr=stack.user.address,
            webhook_addr=settings.webhook_service_addr,  # not started here: nothing calls it
            signer=stack.gateway_signer,
        )
        server = TestServer(create_app(settings, clients=clients), host="127.0.0.1")
        await server.start_server()
        try:
            yield str(server.make_url("")).rstrip("/"), stack.pet.store, stack.order.store
        finally:
            await server.close()
            await clients.close()


@asynccontextmanager
async def mongo_shop(mongodb_uri: str, log_dir: Path) -> AsyncIterator[tuple[str, PetStore, OrderStore]]:
    prefix = f"race_{uuid.uuid4().hex[:8]}"
    stack = Stack(
        mongodb_uri=mongodb_uri,
        api_keys=STAFF_KEY,
        database_prefix=prefix,
        extra_env=RACE_ENV,
        log_dir=log_dir,
    )
    stack.start()
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb_uri, tz_aware=True)
    try:
        yield (
            stack.base_url.removesuffix("/v2"),
            MongoPetStore(client[f"{prefix}_pet"]),
            MongoOrderStore(client[f"{prefix}_order"]),
        )
    finally:
        stack.stop()
        for name in ("pet", "order", "user"):
            await client.drop_database(f"{prefix}_{name}")
        await client.close()


async def race(base_url: str, pets: PetStore, orders: OrderStore) -> None:
    async with ClientSession(timeout=ClientTimeout(total=30)) as session:
        shop = Shop(session, base_url, STAFF_KEY)
        pet_ids = await shop.stock(PETS)
        sessions = [await shop.customer() for _ in range(CUSTOMERS)]
        keys = [uuid.uuid4().hex for _ in sessions]

        answers = await asyncio.gather(
            *(shop.order(customer, pet_ids[n % PETS], keys[n]) for n, customer in enumerate(sessions))
        )

        assert Counter(answer.status for answer in answers) == {200: PETS, 409: CUSTOMERS - PETS}
        placed = {n: answer.body for n, answer in enumerate(answers) if answer.status == 200}
        assert sorted(order["petId"] for order in placed.values()) == sorted(pet_ids)
        refusals = {answer.body["message"] for answer in answers if answer.status == 409}
        assert all("is pending: only an available pet can be ordered" in message for message in refusals)
        assert [await shop.pet_status(pet_id) for pet_id in pet_ids] == ["pending"] * PETS
        # A retry of a placed order replays it: it never meets its own reservation.
        n, first = next(iter(placed.items()))
        retried = await shop.order(sessions[n], first["petId"], keys[n])
        assert (retried.status, retried.body) == (200, first)

    state = await snapshot(pets, orders, pet_ids)
    found = violations(state)
    print(f"invariant violations: {len(found)} over {len(state.pets)} pets and {len(state.orders)} orders")
    assert found == []
    assert len(state.orders) == PETS


async def test_the_race_on_the_embedded_stores() -> None:
    async with embedded_shop() as (base_url, pets, orders):
        await race(base_url, pets, orders)


@pytest.mark.mongo
async def test_the_race_on_the_mongodb_wire_server(mongodb_uri: str, tmp_path: Path) -> None:
    async with mongo_shop(mongodb_uri, tmp_path / "logs") as (base_url, pets, orders):
        await race(base_url, pets, orders)
