"""POST /v2/store/order latency as the databases grow: a local stack on the FerretDB at
MONGODB_URI (run it under `python -m petstore_devstack.ferretdb with --`), one client, one
request at a time. At each size the pet and order databases are topped up to that many pets
and orders (written through the services' own Mongo stores, so the documents are the
services'), then `--requests` staff orders each reserve a fresh pet; the median and p90 are
printed. A store that scans shows as latency growing with the size.

With `--customer` the orders are a signed-up customer's, sent with an Idempotency-Key (the
session check, the customer's open-order count and the idempotency record join the path), and
the seeded orders are that customer's, delivered; each timed order is marked delivered after
its request, so the customer never holds more than one open order.

    python -m petstore_devstack.order_latency [--sizes 0,1000,3000] [--requests 100] [--customer]

Loads the machine for a minute or more: run it under `flock /tmp/petstore-heavy.lock`.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pymongo import AsyncMongoClient

from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2
from petstore_devstack.stack import Stack
from petstore_order.storage.mongo import MongoOrderStore
from petstore_pet.storage.mongo import MongoPetStore

STAFF_KEY = "order-latency-staff-key-0123456789abcdef"
SEED_CONCURRENCY = 16


async def top_up(uri: str, stack: Stack, size: int, fresh: int, owner: int | None) -> list[int]:
    """Bring pets and orders to `size` each (orders name pets that are not ordered through the
    API; `owner`'s and delivered when given), plus `fresh` available pets for the timed
    orders; their ids."""
    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(uri)
    try:
        pets = MongoPetStore(client[stack.database_name("pet")])
        orders = MongoOrderStore(client[stack.database_name("order")])
        missing_pets = max(size - await client[stack.database_name("pet")]["pets"].count_documents({}), 0)
        missing_orders = max(
            size - await client[stack.database_name("order")]["orders"].count_documents({}), 0
        )
        gate = asyncio.Semaphore(SEED_CONCURRENCY)

        async def pet() -> int:
            async with gate:
                stored = await pets.create(pet_pb2.Pet(name="seed", status=pet_pb2.PET_STATUS_AVAILABLE))
                return stored.id

        async def order(pet_id: int) -> None:
            async with gate:
                order = order_pb2.Order(pet_id=pet_id, quantity=1)
                if owner is not None:
                    order.owner_user_id = owner
                    order.status = order_pb2.ORDER_STATUS_DELIVERED
                await orders.create(order)

        seeded = await asyncio.gather(*(pet() for _ in range(missing_pets)))
        await asyncio.gather(*(order(pet_id) for pet_id in seeded[:missing_orders]))
        for _ in range(missing_orders - len(seeded)):
            await order(1)
        return list(await asyncio.gather(*(pet() for _ in range(fresh))))
    finally:
        await client.close()


def call(
    connection: http.client.HTTPConnection, method: str, path: str, body: object, headers: dict[str, str]
) -> bytes:
    connection.request(method, path, json.dumps(body) if body is not None else None, headers)
    response = connection.getresponse()
    answer = response.read()
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status} {answer[:200]!r}")
    return answer


def sign_up(stack: Stack) -> tuple[str, int]:
    """A fresh customer: its session token and its user id."""
    connection = http.client.HTTPConnection(stack.connect_host, stack.gateway_port, timeout=30)
    username, password = f"latency{secrets.token_hex(4)}", "latency-pass-word-1"
    json_headers = {"Content-Type": "application/json", "Accept": "application/json"}
    try:
        user = {"username": username, "email": f"{username}@example.com", "password": password}
        call(connection, "POST", "/v2/user", user, json_headers)
        query = f"/v2/user/login?username={username}&password={password}"
        message = json.loads(call(connection, "GET", query, None, json_headers))["message"]
        token = str(message).removeprefix("logged in user session:")
        me = json.loads(
            call(connection, "GET", f"/v2/user/{username}", None, json_headers | {"api_key": token})
        )
        return token, int(me["id"])
    finally:
        connection.close()


async def deliver(uri: str, stack: Stack, order_id: int) -> None:
    """Out of the customer's open orders, without a request (the staff's move, untimed)."""
    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(uri)
    try:
        orders = client[stack.database_name("order")]["orders"]
        await orders.update_one({"_id": order_id}, {"$set": {"status": "delivered"}})
    finally:
        await client.close()


def time_orders(stack: Stack, pet_ids: list[int], key: str, customer: bool) -> list[float]:
    """Milliseconds per POST /v2/store/order, one keep-alive connection, one at a time."""
    connection = http.client.HTTPConnection(stack.connect_host, stack.gateway_port, timeout=30)
    headers = {"api_key": key, "Content-Type": "application/json", "Accept": "application/json"}
    took = []
    try:
        for pet_id in pet_ids:
            body = {"petId": pet_id, "quantity": 1, "status": "placed"}
            sent = headers | ({"Idempotency-Key": secrets.token_hex(8)} if customer else {})
            started = time.perf_counter()
            answer = call(connection, "POST", "/v2/store/order", body, sent)
            took.append((time.perf_counter() - started) * 1000)
            if customer:
                asyncio.run(deliver(os.environ["MONGODB_URI"], stack, int(json.loads(answer)["id"])))
    finally:
        connection.close()
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,1000,3000", help="comma-separated record counts, ascending")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--customer", action="store_true", help="a customer's orders, with Idempotency-Keys")
    args = parser.parse_args()
    uri = os.environ.get("MONGODB_URI", "")
    if not uri:
        print(
            "MONGODB_URI is not set: run under `python -m petstore_devstack.ferretdb with --`",
            file=sys.stderr,
        )
        return 2
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as logs:
        stack = Stack(
            mongodb_uri=uri,
            api_keys=STAFF_KEY,
            database_prefix=f"latency_{secrets.token_hex(4)}",
            log_dir=Path(logs),
            extra_env={"LOG_LEVEL": "WARNING"},
        )
        stack.start()
        try:
            key, owner = sign_up(stack) if args.customer else (STAFF_KEY, None)
            who = "customer" if args.customer else "staff"
            print(f"{'records':>8} {'median ms':>10} {'p90 ms':>8}  ({who})")
            for size in sizes:
                fresh = asyncio.run(top_up(uri, stack, size, args.requests, owner))
                took = sorted(time_orders(stack, fresh, key, args.customer))
                p90 = took[int(len(took) * 0.9) - 1]
                print(f"{size:>8} {statistics.median(took):>10.1f} {p90:>8.1f}", flush=True)
        finally:
            stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
