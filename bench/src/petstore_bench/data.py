"""The data every run loads: pets (also the baseline's), users to log in as."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp

CATEGORIES = ((1, "Dogs"), (2, "Cats"), (3, "Rabbits"), (4, "Lions"))
STATUSES = ("available", "pending", "sold")
USER_PASSWORD = "bench-password-1"  # noqa: S105 - bench accounts on a throw-away local stack
"""Every bench user's password: URL-safe, so the login script can put it in a query as is."""
LOAD_CONCURRENCY = 8


def pet_body(index: int) -> dict[str, Any]:
    """The index-th bench pet as a client sends it (no id), keys in the gateway's output order."""
    category_id, category_name = CATEGORIES[index % len(CATEGORIES)]
    return {
        "category": {"id": category_id, "name": category_name},
        "name": f"{category_name.lower()}-{index}",
        "photoUrls": [f"https://example.com/photos/{index}.jpg"],
        "tags": [{"id": index % 5 + 1, "name": f"tag{index % 5 + 1}"}],
        "status": STATUSES[index % len(STATUSES)],
    }


def orderable_pet_body(index: int) -> dict[str, Any]:
    """The index-th pet of the order scenario's pool: available, so that an order can reserve it
    (a pending or sold pet cannot be ordered)."""
    return {**pet_body(index), "name": f"orderable-{index}", "status": "available"}


def stored_pet(pet_id: int, index: int) -> dict[str, Any]:
    """The pet as the gateway answers it once stored under `pet_id`."""
    return {"id": pet_id, **pet_body(index)}


def username(index: int) -> str:
    return f"benchuser{index}"


def user_body(index: int) -> dict[str, Any]:
    return {
        "username": username(index),
        "firstName": "Bench",
        "lastName": f"User {index}",
        "email": f"{username(index)}@example.com",
        "password": USER_PASSWORD,
        "phone": "555-0100",
        "userStatus": 1,
    }


@dataclass(frozen=True, slots=True)
class LoadedData:
    pet_ids: tuple[int, ...]
    usernames: tuple[str, ...]
    pet_etags: tuple[str, ...] = ()
    """The current JSON ETag of each pet, in pet_ids' order (for the 304 scenario)."""

    def pet_names(self) -> dict[int, str]:
        return {pet_id: pet_body(index)["name"] for index, pet_id in enumerate(self.pet_ids)}

    def etags_lines(self) -> str:
        """What BENCH_PET_ETAGS_FILE holds: one "<id> <etag>" line per pet."""
        return "".join(
            f"{pet_id} {etag}\n" for pet_id, etag in zip(self.pet_ids, self.pet_etags, strict=True)
        )


class LoadError(RuntimeError):
    """The stack refused the bench's data."""


async def load(base_url: str, api_key: str, *, pets: int, users: int) -> LoadedData:
    """Create `pets` pets and `users` users through the gateway (every check a client meets),
    then read every pet once."""
    limit = asyncio.Semaphore(LOAD_CONCURRENCY)
    async with _session(api_key) as session:

        async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            async with limit:
                return await _post(session, base_url + path, body)

        async def get_etag(pet_id: int) -> str:
            async with limit, session.get(f"{base_url}/pet/{pet_id}") as response:
                await response.read()
                if response.status != 200 or not response.headers.get("ETag"):
                    raise LoadError(f"GET /pet/{pet_id} answered {response.status} without an ETag")
                return response.headers["ETag"]

        created = await asyncio.gather(*(post("/pet", pet_body(index)) for index in range(pets)))
        await asyncio.gather(*(post("/user", user_body(index)) for index in range(users)))
        pet_ids = tuple(int(pet["id"]) for pet in created)
        # Every pet read once: the ETags the 304 scenario revalidates, and a gateway read cache
        # as full as after a while in service, so the scenarios measure a cached read rather
        # than the warm-up's misses. (With GATEWAY_WORKERS > 1 each read fills one worker's
        # cache: the others fill during the warm-up.)
        etags = tuple(await asyncio.gather(*(get_etag(pet_id) for pet_id in pet_ids)))
    return LoadedData(
        pet_ids=pet_ids,
        usernames=tuple(username(index) for index in range(users)),
        pet_etags=etags,
    )


async def load_orderable_pets(base_url: str, api_key: str, count: int) -> tuple[int, ...]:
    """Create `count` available pets through the gateway, as `load` creates its pets; their ids,
    the index-th pet's at index."""
    ids = [0] * count
    indexes = iter(range(count))
    async with _session(api_key) as session:

        async def worker() -> None:  # a few workers, not one task per pet: pools run to 10^4-10^5
            for index in indexes:
                ids[index] = int((await _post(session, f"{base_url}/pet", orderable_pet_body(index)))["id"])

        await asyncio.gather(*(worker() for _ in range(min(LOAD_CONCURRENCY, count))))
    return tuple(ids)


def _session(api_key: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(headers={"Accept": "application/json", "api_key": api_key})


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> dict[str, Any]:
    async with session.post(url, json=body) as response:
        if response.status != 200:
            raise LoadError(f"POST {url} answered {response.status}: {await response.text()}")
        reply: dict[str, Any] = await response.json()
        return reply
