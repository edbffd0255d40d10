"""Users through the gateway: POST /user, GET /user/login, and sessions as api keys."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any

import pytest

from tests.e2e.client import JSON, XML, Api, parse
from tests.e2e.test_pets import a_pet

FORMATS = [JSON, XML]
PASSWORD = "correct horse battery staple"


def a_user(unique: str, **fields: Any) -> dict[str, Any]:
    user: dict[str, Any] = {
        "username": f"user{unique}",
        "firstName": "Ada",
        "lastName": "Lovelace",
        "email": f"ada{unique}@example.test",
        "password": PASSWORD,
        "phone": "+44 20 7946 0000",
        "userStatus": 0,  # staff-managed: a sign-up without a static key gets 0 whatever it sends
    }
    user.update(fields)
    return user


async def login(api: Api, username: str, password: str = PASSWORD, fmt: str = JSON) -> str:
    reply = await api.call(
        "GET", "/user/login", params={"username": username, "password": password}, accept=fmt
    )
    body = parse(reply, fmt)
    assert body["code"] == 200
    assert body["type"] == "unknown"
    prefix = "logged in user session:"
    assert body["message"].startswith(prefix)
    return str(body["message"][len(prefix) :])


@pytest.mark.parametrize("fmt", FORMATS)
async def test_sign_up_and_log_in(api: Api, unique: str, fmt: str) -> None:
    created = await api.send("POST", "/user", a_user(unique), fmt, key=False)
    assert created.status == 200, created.text
    assert PASSWORD not in created.text
    reply = await api.call(
        "GET", "/user/login", params={"username": f"user{unique}", "password": PASSWORD}, accept=fmt
    )
    assert reply.status == 200, reply.text
    assert int(reply.headers["X-Rate-Limit"]) > 0
    expires = datetime.fromisoformat(reply.headers["X-Expires-After"].replace("Z", "+00:00"))
    assert expires.tzinfo is not None
    assert await login(api, f"user{unique}", fmt=fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("missing", ["username", "email", "password"])
async def test_sign_up_needs_username_email_and_password(
    api: Api, unique: str, fmt: str, missing: str
) -> None:
    user = a_user(unique)
    del user[missing]
    reply = await api.send("POST", "/user", user, fmt, key=False)
    assert reply.status == 400, reply.text
    assert reply.error_message()


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_taken_username_is_409(api: Api, unique: str, fmt: str) -> None:
    assert (await api.send("POST", "/user", a_user(unique), fmt, key=False)).status == 200
    again = await api.send("POST", "/user", a_user(unique, email="other@example.test"), fmt, key=False)
    assert again.status == 409
    assert again.error_message()


async def test_twelve_racing_sign_ups_one_wins(api: Api, unique: str) -> None:
    replies = await asyncio.gather(
        *(api.send("POST", "/user", a_user(unique), JSON, key=False) for _ in range(12))
    )
    assert sorted(r.status for r in replies) == [200] + [409] * 11


@pytest.mark.parametrize("fmt", FORMATS)
async def test_login_errors(api: Api, unique: str, fmt: str) -> None:
    assert (await api.send("POST", "/user", a_user(unique), JSON, key=False)).status == 200
    cases = [
        ({"username": f"user{unique}", "password": "wrong"}, 400),
        ({"username": f"nobody{unique}", "password": PASSWORD}, 404),
        ({"username": f"user{unique}"}, 400),
        ({"password": PASSWORD}, 400),
    ]
    for params, status in cases:
        reply = await api.call("GET", "/user/login", params=params, accept=fmt)
        assert reply.status == status, (params, reply.text)
        assert reply.error_message()
        assert PASSWORD not in reply.text


async def test_a_session_works_as_an_api_key(api: Api, unique: str) -> None:
    assert (await api.send("POST", "/user", a_user(unique), JSON, key=False)).status == 200
    token = await login(api, f"user{unique}")
    pet = parse(await api.send("POST", "/pet", a_pet(unique), JSON), JSON)
    order = json.dumps({"petId": pet["id"], "quantity": 1})
    with_session = await api.call("POST", "/store/order", body=order, content_type=JSON, api_key=token)
    assert with_session.status == 200, with_session.text


@pytest.mark.parametrize("key", [None, "", "not-a-key", "e2e-static-key-012345678", "a.b.c"])
async def test_writes_without_a_valid_key_are_401(api: Api, unique: str, key: str | None) -> None:
    reply = await api.call("POST", "/pet", body=json.dumps(a_pet(unique)), content_type=JSON, api_key=key)
    assert reply.status == 401, reply.text
    assert reply.error_message()
    assert "e2e-static-key" not in reply.text
