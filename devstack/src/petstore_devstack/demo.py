"""Demo data for `make run-demo`: the classic Petstore's ten pets in four categories, a few
users and orders, loaded through the public API so that it goes through every check a
client's data goes through."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

CATEGORIES = {1: "Dogs", 2: "Cats", 3: "Rabbits", 4: "Lions"}

# (name, category id, tags, status), in the classic order so a fresh store numbers them 1..10.
PETS: tuple[tuple[str, int, tuple[str, ...], str], ...] = (
    ("Cat 1", 2, ("tag1", "tag2"), "available"),
    ("Cat 2", 2, ("tag2", "tag3"), "available"),
    ("Cat 3", 2, ("tag3", "tag4"), "pending"),
    ("Dog 1", 1, ("tag1", "tag2"), "available"),
    ("Dog 2", 1, ("tag2", "tag3"), "sold"),
    ("Dog 3", 1, ("tag3", "tag4"), "pending"),
    ("Lion 1", 4, ("tag1", "tag2"), "available"),
    ("Lion 2", 4, ("tag2", "tag3"), "available"),
    ("Lion 3", 4, ("tag3", "tag4"), "available"),
    ("Rabbit 1", 3, ("tag3", "tag4"), "available"),
)

DEMO_PASSWORD = "demo-password"  # noqa: S105 - demo accounts on a local stack, printed to the user
USERS = ("user1", "user2", "user3")

# (index into PETS, quantity, status)
ORDERS = ((1, 1, "placed"), (4, 2, "approved"), (7, 1, "delivered"))


@dataclass
class DemoData:
    """What was loaded, for the start-up message."""

    pet_ids: list[int] = field(default_factory=list)
    order_ids: list[int] = field(default_factory=list)
    usernames: list[str] = field(default_factory=list)


def pet_body(index: int) -> dict[str, Any]:
    name, category_id, tags, status = PETS[index]
    slug = name.lower().replace(" ", "-")
    return {
        "name": name,
        "category": {"id": category_id, "name": CATEGORIES[category_id]},
        "photoUrls": [f"https://example.com/photos/{slug}.jpg"],
        "tags": [{"id": int(tag.removeprefix("tag")), "name": tag} for tag in tags],
        "status": status,
    }


def user_body(username: str) -> dict[str, Any]:
    number = int(username.removeprefix("user"))
    return {
        "username": username,
        "firstName": f"First {number}",
        "lastName": f"Last {number}",
        "email": f"{username}@example.com",
        "password": DEMO_PASSWORD,
        "phone": f"555-010{number}",
        "userStatus": 1,
    }


def load_demo_data(base_url: str, api_key: str) -> DemoData:
    """Create the demo pets, users and orders; raises on the first refusal."""
    loaded = DemoData()
    for index in range(len(PETS)):
        loaded.pet_ids.append(int(_post(base_url, "/pet", pet_body(index), api_key)["id"]))
    for username in USERS:
        _post(base_url, "/user", user_body(username), api_key)
        loaded.usernames.append(username)
    for pet_index, quantity, status in ORDERS:
        pet_id = loaded.pet_ids[pet_index]
        order = {"petId": pet_id, "quantity": quantity, "status": status, "complete": False}
        loaded.order_ids.append(int(_post(base_url, "/store/order", order, api_key)["id"]))
    return loaded


def _post(base_url: str, path: str, body: dict[str, Any], api_key: str) -> dict[str, Any]:
    request = urllib.request.Request(
        base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json", "api_key": api_key},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            reply: dict[str, Any] = json.loads(response.read())
            return reply
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"demo data: POST {path} answered {exc.code}: {exc.read().decode()}") from exc
