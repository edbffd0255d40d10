"""The callers of the authorization tests: staff (the static key), two customers with their
sessions, and anonymous; and a request as one of them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.e2e.client import JSON, Api, Reply, parse, to_xml
from tests.e2e.test_pets import a_pet
from tests.e2e.test_users import a_user, login


@dataclass
class Customer:
    username: str
    user_id: int
    token: str


@dataclass
class Cast:
    """Two customers and a pet in the catalogue; staff is the static key."""

    ann: Customer
    bob: Customer
    pet: dict[str, Any]


async def sign_up(api: Api, unique: str, name: str) -> Customer:
    user = a_user(f"{unique}{name}")
    reply = await api.send("POST", "/user", user, JSON, key=False)
    assert reply.status == 200, reply.text
    return Customer(user["username"], int(reply.json["message"]), await login(api, user["username"]))


def body(payload: Any, fmt: str, root: str) -> str:
    return json.dumps(payload) if fmt == JSON else to_xml(payload, root)


async def as_(
    api: Api, key: str | None, method: str, path: str, fmt: str, payload: Any = None, root: str = ""
) -> Reply:
    return await api.call(
        method,
        path,
        body=None if payload is None else body(payload, fmt, root),
        content_type=None if payload is None else fmt,
        accept=fmt,
        api_key=key,
    )


def keys(api: Api, cast: Cast) -> dict[str, str | None]:
    return {"anonymous": None, "customer": cast.ann.token, "staff": api.static_key}


async def new_pet(api: Api, unique: str) -> dict[str, Any]:
    """An available pet of its own, created by staff: one to order. An order reserves its pet
    (pending until the order is delivered or cancelled), so each live order needs its own."""
    return parse(await api.send("POST", "/pet", a_pet(unique), JSON), JSON)


async def make_cast(api: Api, unique: str) -> Cast:
    pet = await new_pet(api, unique)
    return Cast(await sign_up(api, unique, "ann"), await sign_up(api, unique, "bob"), pet)
