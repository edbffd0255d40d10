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


class LoadError(RuntimeError):
    """The stack refused the bench's data."""


async def load(base_url: str, api_key: str, *, pets: int, users: int) -> LoadedData:
    """Create `pets` pets and `users` users through the gateway (every check a client meets)."""
    limit = asyncio.Semaphore(LOAD_CONCURRENCY)
    headers = {"Accept": "application/json", "api_key": api_key}
    async with aiohttp.ClientSession(headers=headers) as session:

        async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            async with limit, session.post(base_url + path, json=body) as response:
                if response.status != 200:
                    raise LoadError(f"POST {path} answered {response.status}: {await response.text()}")
                reply: dict[str, Any] = await response.json()
                return reply

        created = await asyncio.gather(*(post("/pet", pet_body(index)) for index in range(pets)))
        await asyncio.gather(*(post("/user", user_body(index)) for index in range(users)))
    return LoadedData(
        pet_ids=tuple(int(pet["id"]) for pet in created),
        usernames=tuple(username(index) for index in range(users)),
    )
