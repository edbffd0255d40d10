"""Demo data for `make run-demo`: the classic Petstore's ten pets in four categories, three
customers who each placed orders, some of them since moved on by staff, loaded through the
public API as those callers would, so that it goes through every check a client's data goes
through (a customer's order is its own; a delivered order is complete because the lifecycle
made it so)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
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

ORDER_LIFECYCLE = ("placed", "approved", "delivered")
"""The moves staff make, in order (the order service allows no other)."""

# (customer, index into PETS, quantity, status the staff moved it to): each customer owns some.
ORDERS: tuple[tuple[str, int, int, str], ...] = (
    ("user1", 1, 1, "delivered"),
    ("user1", 6, 1, "placed"),
    ("user2", 3, 2, "approved"),
    ("user2", 7, 1, "delivered"),
    ("user3", 9, 1, "placed"),
)


@dataclass
class DemoData:
    """What was loaded, for the start-up message."""

    pet_ids: list[int] = field(default_factory=list)
    order_ids: list[int] = field(default_factory=list)
    usernames: list[str] = field(default_factory=list)
    orders_by_user: dict[str, list[int]] = field(default_factory=dict)


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
    sessions = {username: login(base_url, username) for username in USERS}
    for username, pet_index, quantity, status in ORDERS:
        order = {"petId": loaded.pet_ids[pet_index], "quantity": quantity}
        order_id = int(_post(base_url, "/store/order", order, sessions[username])["id"])
        for step in ORDER_LIFECYCLE[1 : ORDER_LIFECYCLE.index(status) + 1]:
            _call(base_url, "PUT", f"/store/order/{order_id}", {"status": step}, api_key)
        loaded.order_ids.append(order_id)
        loaded.orders_by_user.setdefault(username, []).append(order_id)
    return loaded


def login(base_url: str, username: str) -> str:
    """A demo customer's session token (what its `api_key` is)."""
    query = urllib.parse.urlencode({"username": username, "password": DEMO_PASSWORD})
    message = str(_call(base_url, "GET", f"/user/login?{query}", None, "")["message"])
    return message.rpartition(":")[2]


def _post(base_url: str, path: str, body: dict[str, Any], api_key: str) -> dict[str, Any]:
    return _call(base_url, "POST", path, body, api_key)


def _call(base_url: str, method: str, path: str, body: dict[str, Any] | None, api_key: str) -> dict[str, Any]:
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if api_key:
        headers["api_key"] = api_key
    request = urllib.request.Request(
        base_url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers=headers,
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            reply: dict[str, Any] = json.loads(response.read())
            return reply
    except urllib.error.HTTPError as exc:
        raise RuntimeError(
            f"demo data: {method} {path.partition('?')[0]} answered {exc.code}: {exc.read().decode()}"
        ) from exc
