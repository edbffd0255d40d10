"""What generated clients send, end to end: Bearer credentials, bodies without a Content-Type,
array query parameters in every common form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.client import JSON, XML, Api, Reply
from tests.e2e.test_pet_catalogue import create, failure, find_all, ids_of, success_message
from tests.e2e.test_pets import a_pet

CONFLICT = "api_key and Authorization: Bearer name different credentials: send one of them, or the same"
NOT_JSON = (
    "request body is not valid JSON; a body without Content-Type is read as JSON "
    "(declare application/xml for XML)"
)


async def undeclared(api: Api, method: str, path: str, body: bytes, headers: dict[str, str]) -> Reply:
    """Send `body` with no Content-Type header at all, as openapi-generator 7 does."""
    async with api.session.request(
        method,
        api.base_url + path,
        data=body,
        headers={"Accept": JSON, **headers},
        skip_auto_headers=("Content-Type",),
    ) as response:
        assert "Content-Type" not in response.request_info.headers
        return Reply(response.status, response.headers, await response.text())


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


async def log_in(api: Api, unique: str) -> tuple[str, str]:
    """A fresh user and one of its sessions: (username, token)."""
    username = f"bearer-{unique}"
    user = {"username": username, "email": f"{username}@example.com", "password": "pass-word-1"}
    assert (await api.send("POST", "/user", user, JSON, key=False)).status == 200
    reply = await api.call("GET", "/user/login", params={"username": username, "password": "pass-word-1"})
    return username, success_message(reply, JSON).removeprefix("logged in user session:")


# --- Bearer ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [JSON, XML])
async def test_a_static_key_as_bearer_writes_like_api_key(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    reply = await api.call(
        "POST",
        f"/pet/{pet['id']}",
        body=f"name=renamed-{unique}",
        content_type="application/x-www-form-urlencoded",
        accept=fmt,
        headers=bearer(api.static_key),
    )
    assert success_message(reply, fmt) == str(pet["id"])
    assert (await api.call("GET", f"/pet/{pet['id']}")).json["name"] == f"renamed-{unique}"
    deleted = await api.call("DELETE", f"/pet/{pet['id']}", headers=bearer(api.static_key))
    assert success_message(deleted, JSON) == str(pet["id"])


@pytest.mark.parametrize("fmt", [JSON, XML])
async def test_bearer_gets_api_keys_errors(api: Api, unique: str, fmt: str) -> None:
    pet = await create(api, a_pet(unique))
    wrong = await api.call("DELETE", f"/pet/{pet['id']}", accept=fmt, headers=bearer("made-up-key"))
    assert failure(wrong, 401, fmt) == "invalid api_key"
    both = await api.call(
        "DELETE", f"/pet/{pet['id']}", accept=fmt, api_key=api.static_key, headers=bearer("made-up-key")
    )
    assert failure(both, 400, fmt) == CONFLICT
    read = await api.call("GET", f"/pet/{pet['id']}", accept=fmt, api_key="one", headers=bearer("other"))
    assert failure(read, 400, fmt) == CONFLICT
    same = await api.call(
        "DELETE", f"/pet/{pet['id']}", api_key=api.static_key, headers=bearer(api.static_key)
    )
    assert success_message(same, JSON) == str(pet["id"])


async def test_a_session_as_bearer_acts_for_its_user_until_logout_with_bearer(api: Api, unique: str) -> None:
    username, token = await log_in(api, unique)
    update = await api.call(
        "PUT",
        f"/user/{username}",
        body=json.dumps({"firstName": "Bea"}),
        content_type=JSON,
        headers=bearer(token),
    )
    assert update.status == 200, update.text
    assert (await api.call("GET", f"/user/{username}", headers=bearer(token))).json["firstName"] == "Bea"
    assert success_message(await api.call("GET", "/user/logout", headers=bearer(token)), JSON) == "ok"
    after = await api.call("DELETE", f"/user/{username}", headers=bearer(token))
    assert failure(after, 401, JSON) == "the session has ended; log in again"


# --- Bodies without Content-Type ---------------------------------------------------------


async def test_bodies_without_content_type_are_read_as_json(api: Api, unique: str) -> None:
    key = {"api_key": api.static_key}
    username = f"plain-{unique}"
    user = {"username": username, "email": f"{username}@example.com", "password": "pass-word-1"}
    created = await undeclared(api, "POST", "/user", json.dumps(user).encode(), {})
    assert created.status == 200, created.text
    listed = [{**user, "username": f"{username}-{n}"} for n in (1, 2)]
    for path, users in (("/user/createWithList", listed[:1]), ("/user/createWithArray", listed[1:])):
        reply = await undeclared(api, "POST", path, json.dumps(users).encode(), key)
        assert reply.status == 200, reply.text
    updated = await undeclared(api, "PUT", f"/user/{username}", b'{"phone": "555"}', key)
    assert updated.status == 200, updated.text
    assert (await api.call("GET", f"/user/{username}", api_key=api.static_key)).json["phone"] == "555"
    pet = await undeclared(api, "POST", "/pet", json.dumps(a_pet(unique)).encode(), key)
    assert pet.status == 200, pet.text
    order = await undeclared(api, "POST", "/store/order", json.dumps({"petId": pet.json["id"]}).encode(), key)
    assert order.status == 200, order.text
    assert order.json["petId"] == pet.json["id"]


@pytest.mark.parametrize("body", [b"{not json", b"<User><username>x</username></User>"])
async def test_a_body_without_content_type_that_is_not_json_is_400(api: Api, body: bytes) -> None:
    reply = await undeclared(api, "POST", "/user", body, {})
    assert failure(reply, 400, JSON) == NOT_JSON


async def test_a_declared_type_we_do_not_read_stays_415(api: Api, unique: str) -> None:
    reply = await api.call("POST", "/user", body=json.dumps({"username": unique}), content_type="text/plain")
    assert failure(reply, 415, JSON) == "unsupported Content-Type: use application/json or application/xml"


# --- Array query parameters --------------------------------------------------------------


async def test_find_by_status_reads_every_array_form_alike(api: Api, unique: str) -> None:
    await create(api, {**a_pet(unique), "status": "sold"})
    expected = ids_of(await find_all(api, "/pet/findByStatus", [("status", "pending"), ("status", "sold")]))
    assert expected
    for params in (
        [("status", "pending,sold")],
        [("status[]", "pending"), ("status[]", "sold")],
        [("status[0]", "pending"), ("status[1]", "sold")],
        [("status[0]", "sold"), ("status", "pending,sold"), ("status[]", "pending")],
    ):
        assert ids_of(await find_all(api, "/pet/findByStatus", params)) == expected, params


async def test_find_by_tags_reads_every_array_form_alike(api: Api, unique: str) -> None:
    tagged = [await create(api, {**a_pet(unique), "tags": [{"name": f"{tag}-{unique}"}]}) for tag in "ab"]
    expected = sorted(pet["id"] for pet in tagged)
    first, second = f"a-{unique}", f"b-{unique}"
    forms: list[list[tuple[str, str]]] = [
        [("tags", f"{first},{second}")],
        [("tags", first), ("tags", second)],
        [("tags[]", first), ("tags[]", second)],
        [("tags[0]", first), ("tags[1]", second)],
        [("tags[1]", second), ("tags", first), ("tags[]", first)],
    ]
    for params in forms:
        assert ids_of(await find_all(api, "/pet/findByTags", params)) == expected, params


@pytest.mark.parametrize("fmt", [JSON, XML])
@pytest.mark.parametrize("query", ["status[x]=sold", "status[0=sold", "tags[0]]=a"])
async def test_malformed_array_indexes_are_400(api: Api, fmt: str, query: str) -> None:
    name = query.split("[", 1)[0]
    path = "/pet/findByStatus" if name == "status" else "/pet/findByTags"
    reply = await api.call("GET", f"{path}?{query}", accept=fmt)
    message: Any = failure(reply, 400, fmt)
    assert message.startswith(f"malformed {name}[...] query parameter: send {name}=a,b"), message
