"""The growth mode's data: a shop grown in steps through the gateway's own API, never behind it.

The proportions, the same at every size, are those of a shop whose customers each buy a few
pets: one customer per PETS_PER_USER pets, each with ORDERS_PER_USER orders (one order per
sold pet: a tenth of the pets), so a customer's order list has the same length at every size
and only the store's totals grow. Pets go in with POST /pet (the static key), customers with
POST /user/createWithArray, each customer logs in once (GET /user/login: the session its orders
and the order-list figure use) and places its orders with POST /store/order as itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import aiohttp

from petstore_bench import data

PETS_PER_USER = 100
ORDERS_PER_USER = 10
SEED_CONCURRENCY = 32
"""Requests in flight while seeding: as many as the figures' connections."""
USERS_PER_REQUEST = 10
"""Customers per POST /user/createWithArray (each is an argon2 hash in the user service)."""
HASHING_CONCURRENCY = 4
"""Sign-up batches and logins in flight: each costs argon2 hashes (about 45 ms of CPU each) on
the user service's two hashing threads, and more queued behind them would wait past the
gateway's 5 s gRPC deadline (32 batches of 20 did: 503s)."""
ORDER_CONCURRENCY = 16
"""Customer orders in flight while seeding: each is three processes and two database writes;
on FerretDB at 10^5 pets, 32 at a time queued one ReservePet past its deadline."""
ORDER_ATTEMPTS = 3
RETRIED_STATUSES = frozenset({503, 504})
SESSION_PREFIX = "logged in user session:"
"""What the login's message says before its token (the gateway's routes/user.py)."""


def users_for(pets: int) -> int:
    """The customers a shop of `pets` pets has (at least one)."""
    return max(1, pets // PETS_PER_USER)


def order_body(pet_id: int) -> dict[str, Any]:
    return {"petId": pet_id, "quantity": 1, "shipDate": "2030-01-01T10:00:00Z", "status": "placed"}


class SeedError(RuntimeError):
    """The stack refused the seed's data."""


class OutOfTime(RuntimeError):
    """The run's budget ran out while seeding a size: what it got done is in the message."""


@dataclass
class Shop:
    """What was put in so far (ids as the gateway answered them)."""

    pet_ids: list[int] = field(default_factory=list)
    available: list[int] = field(default_factory=list)
    """Pets nobody ordered yet, oldest first: the customers' and the order figure's to order."""
    usernames: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    """Each customer's session token, in usernames' order."""
    customer_orders: int = 0
    other_orders: int = 0
    """Orders the order figure placed (with the static key: they belong to no customer)."""
    order_retries: int = 0
    """Seed orders sent again after a 503/504 (with the same Idempotency-Key)."""
    other_pets: int = 0
    """Pets the POST pet figure created (wrk's: their ids are not known, so nobody orders them).
    A size counts the seeded pets only: with them counted, a fast POST pet figure at one size
    would leave the next size nothing to seed, and its customers and the order figure no pets."""

    @property
    def pets(self) -> int:
        return len(self.pet_ids) + self.other_pets

    def take_available(self, count: int) -> list[int]:
        taken, self.available = self.available[:count], self.available[count:]
        return taken

    def counts(self) -> dict[str, int]:
        return {
            "pets": self.pets,
            "seeded_pets": len(self.pet_ids),
            "users": len(self.usernames),
            "orders": self.customer_orders + self.other_orders,
            "customer_orders": self.customer_orders,
            "seed_order_retries": self.order_retries,
        }


@dataclass(frozen=True, slots=True)
class SeedTiming:
    size: int
    seconds: float
    added: dict[str, int]


async def _bounded(
    jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int, what: str, deadline: float | None
) -> None:
    """Run the jobs with at most `concurrency` in flight (a few workers, not a task per job);
    OutOfTime once `deadline` (monotonic) passes, saying how many of `what` were done."""
    pending = iter(jobs)
    done = 0
    started = time.monotonic()

    async def worker() -> None:
        nonlocal done
        for job in pending:
            if deadline is not None and time.monotonic() > deadline:
                raise OutOfTime(
                    f"{done} {what} in {time.monotonic() - started:.0f} s when the budget ran out"
                )
            await job()
            done += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def _json(response: aiohttp.ClientResponse, what: str) -> Any:
    if response.status != 200:
        raise SeedError(f"{what} answered {response.status}: {(await response.text())[:300]}")
    return await response.json()


async def grow(
    base_url: str, api_key: str, shop: Shop, size: int, deadline: float | None = None
) -> SeedTiming:
    """Add pets, customers and their orders until the shop has `size` seeded pets and the
    customers and orders of that size."""
    started = time.monotonic()
    new_pets = max(0, size - len(shop.pet_ids))
    first_user = len(shop.usernames)
    new_users = max(0, users_for(size) - first_user)
    connector = aiohttp.TCPConnector(limit=SEED_CONCURRENCY)
    headers = {"Accept": "application/json", "api_key": api_key}
    async with aiohttp.ClientSession(base_url + "/", headers=headers, connector=connector) as session:
        created: list[int] = []

        async def add_pet(index: int) -> None:
            body = {**data.pet_body(index), "status": "available", "name": f"growth-{index}"}
            async with session.post("pet", json=body) as response:
                created.append(int((await _json(response, "POST /pet"))["id"]))

        first_pet = len(shop.pet_ids)
        await _bounded(
            (partial(add_pet, i) for i in range(first_pet, first_pet + new_pets)),
            SEED_CONCURRENCY,
            f"of {new_pets} pets",
            deadline,
        )
        created.sort()
        shop.pet_ids.extend(created)
        shop.available.extend(created)

        batches = [
            list(range(start, min(start + USERS_PER_REQUEST, first_user + new_users)))
            for start in range(first_user, first_user + new_users, USERS_PER_REQUEST)
        ]

        async def add_users(indexes: list[int]) -> None:
            body = [data.user_body(index) for index in indexes]
            async with session.post("user/createWithArray", json=body) as response:
                await _json(response, "POST /user/createWithArray")

        await _bounded(
            (partial(add_users, b) for b in batches), HASHING_CONCURRENCY, "sign-up batches", deadline
        )
        names = [data.username(index) for index in range(first_user, first_user + new_users)]
        tokens: dict[str, str] = {}

        async def log_in(name: str) -> None:
            query = {"username": name, "password": data.USER_PASSWORD}
            async with session.get("user/login", params=query) as response:
                message = str((await _json(response, "GET /user/login"))["message"])
            if not message.startswith(SESSION_PREFIX):
                raise SeedError(f"the login of {name} said {message!r}")
            tokens[name] = message.removeprefix(SESSION_PREFIX)

        await _bounded((partial(log_in, n) for n in names), HASHING_CONCURRENCY, "logins", deadline)
        shop.usernames.extend(names)
        shop.sessions.extend(tokens[name] for name in names)

        wanted = [(tokens[name], pet_id) for name in names for pet_id in shop.take_available(ORDERS_PER_USER)]

        async def place(token: str, pet_id: int) -> None:
            # Sent again (same Idempotency-Key: never a second order) when the order service
            # answered 503/504: on FerretDB at 10^5 pets an order's ReservePet can outlast its
            # 2 s deadline under the seed's load (one in about 8,000 did).
            headers = {"api_key": token, "Idempotency-Key": f"growth-order-{pet_id}"}
            for attempt in range(1, ORDER_ATTEMPTS + 1):
                async with session.post("store/order", json=order_body(pet_id), headers=headers) as r:
                    if r.status in RETRIED_STATUSES and attempt < ORDER_ATTEMPTS:
                        await r.read()
                        shop.order_retries += 1
                        continue
                    await _json(r, "POST /store/order")
                    return

        await _bounded(
            (partial(place, t, p) for t, p in wanted), ORDER_CONCURRENCY, f"of {len(wanted)} orders", deadline
        )
        shop.customer_orders += len(wanted)
    return SeedTiming(
        size,
        time.monotonic() - started,
        {"pets": new_pets, "users": new_users, "orders": len(wanted)},
    )
