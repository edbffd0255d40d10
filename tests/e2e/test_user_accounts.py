"""User accounts beyond sign-up and login: createWithArray/List, logout, and GET, PUT and
DELETE /user/{username}, in JSON and XML."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.e2e.client import JSON, XML, Api, Reply, parse, to_xml
from tests.e2e.test_pet_catalogue import NO_KEY, failure, success_message
from tests.e2e.test_pets import a_pet
from tests.e2e.test_users import PASSWORD, a_user, login

FORMATS = [JSON, XML]
BATCH_PATHS = ["/user/createWithArray", "/user/createWithList"]
NOT_THE_USER = "only staff or the user itself may change this user"
BAD_LOGIN = "invalid username/password supplied"
SESSION_ENDED = "the session has ended; log in again"


def users_body(users: list[dict[str, Any]], fmt: str) -> str:
    """A user list: a JSON array, or <users><User>…</User></users>."""
    if fmt == JSON:
        return json.dumps(users)
    return "<users>" + "".join(to_xml(user, "User") for user in users) + "</users>"


async def create_users(
    api: Api, path: str, users: list[dict[str, Any]], fmt: str, *, key: bool = True
) -> Reply:
    return await api.call(
        "POST",
        path,
        body=users_body(users, fmt),
        content_type=fmt,
        accept=fmt,
        api_key=api.static_key if key else None,
    )


async def sign_up(api: Api, user: dict[str, Any]) -> int:
    reply = await api.send("POST", "/user", user, JSON, key=False)
    assert reply.status == 200, reply.text
    return int(reply.json["message"])


def without_password(user: dict[str, Any], user_id: int) -> dict[str, Any]:
    """What GET /user/{username} shows of `user`: everything but the password, and the id."""
    return {**{key: value for key, value in user.items() if key != "password"}, "id": user_id}


async def get_user(api: Api, username: str, fmt: str = JSON) -> dict[str, Any]:
    reply = await api.call("GET", f"/user/{username}", accept=fmt, api_key=api.static_key)
    assert PASSWORD not in reply.text
    body = parse(reply, fmt)
    assert "password" not in body
    return body


async def put_user(api: Api, username: str, payload: dict[str, Any], fmt: str, api_key: str | None) -> Reply:
    body = json.dumps(payload) if fmt == JSON else to_xml(payload, "User")
    return await api.call(
        "PUT", f"/user/{username}", body=body, content_type=fmt, accept=fmt, api_key=api_key
    )


async def write_with(api: Api, api_key: str, unique: str) -> Reply:
    """A write that needs an api_key and that customers may do: an order for a new pet."""
    pet = parse(await api.send("POST", "/pet", a_pet(unique), JSON), JSON)
    order = json.dumps({"petId": pet["id"], "quantity": 1})
    return await api.call("POST", "/store/order", body=order, content_type=JSON, api_key=api_key)


async def login_fails(api: Api, username: str, password: str, status: int) -> str:
    reply = await api.call("GET", "/user/login", params={"username": username, "password": password})
    return failure(reply, status, JSON)


# --- POST /user/createWithArray and /user/createWithList ------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", BATCH_PATHS)
async def test_create_with_array_or_list_stores_every_user(
    api: Api, unique: str, fmt: str, path: str
) -> None:
    users = [a_user(f"{unique}x{i}", firstName=f"First{i}", userStatus=i) for i in range(3)]
    reply = await create_users(api, path, users, fmt)
    assert success_message(reply, fmt) == "ok"
    assert PASSWORD not in reply.text
    ids = []
    for user in users:
        stored = await get_user(api, user["username"], fmt)
        assert isinstance(stored["id"], int)
        assert stored["id"] > 0
        assert stored == without_password(user, stored["id"])
        ids.append(stored["id"])
    assert len(set(ids)) == 3
    assert await login(api, users[2]["username"], fmt=fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", BATCH_PATHS)
async def test_create_with_a_client_chosen_id(api: Api, unique: str, fmt: str, path: str) -> None:
    user_id = 10**12 + int(unique[:8], 16)
    user = a_user(unique, id=user_id)
    assert success_message(await create_users(api, path, [user], fmt), fmt) == "ok"
    assert await get_user(api, user["username"], fmt) == without_password(user, user_id)


BAD_BATCHES: dict[str, tuple[dict[int, dict[str, Any]], int, str]] = {
    # changes by position (None drops the field, {u0} is the first user's username),
    # the status, and the message: it names the first user rejected
    "bad-email": ({1: {"email": "not-an-email"}}, 400, "users[1].email: must look like an email"),
    "missing-email": ({2: {"email": None}}, 400, "users[2].email is required"),
    "missing-password": ({1: {"password": None}}, 400, "users[1].password is required"),
    "bad-username": (
        {1: {"username": "has space"}},
        400,
        "users[1].username: may contain only letters, digits and . _ - @",
    ),
    "first-of-two": (
        {1: {"email": "x"}, 2: {"username": "has space"}},
        400,
        "users[1].email: must be at least 3 characters",
    ),
    "duplicate": ({2: {"username": "{u0}"}}, 400, "users[2]: duplicate username"),
}


FIELD_RULE_MESSAGES = pytest.mark.since("user-service", "1.1.0")
"""The user service names a field rule's violation `users[1].email: ...` from this version on."""
NAMED_BY_FIELD_RULES = {"bad-email", "bad-username", "first-of-two"}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(case, id=name, marks=FIELD_RULE_MESSAGES if name in NAMED_BY_FIELD_RULES else ())
        for name, case in BAD_BATCHES.items()
    ],
)
async def test_a_batch_with_one_invalid_user_stores_none(
    api: Api, unique: str, fmt: str, case: tuple[dict[int, dict[str, Any]], int, str]
) -> None:
    changes, status, message = case
    users = [a_user(f"{unique}x{i}") for i in range(3)]
    for index, change in changes.items():
        change = {
            key: value.format(u0=users[0]["username"]) if value else value for key, value in change.items()
        }
        users[index] = {key: value for key, value in {**users[index], **change}.items() if value is not None}
    for path in BATCH_PATHS:
        reply = await create_users(api, path, users, fmt)
        assert failure(reply, status, fmt) == message
        assert PASSWORD not in reply.text
    for user in users:
        if user["username"] != "has space":
            absent = await api.call("GET", f"/user/{user['username']}", accept=fmt)
            assert failure(absent, 404, fmt) == f"user {user['username']} not found"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", BATCH_PATHS)
async def test_a_batch_with_a_taken_username_stores_none(api: Api, unique: str, fmt: str, path: str) -> None:
    taken = a_user(f"{unique}taken", firstName="Original")
    taken_id = await sign_up(api, taken)
    users = [a_user(f"{unique}x0"), a_user(f"{unique}taken", firstName="Impostor"), a_user(f"{unique}x2")]
    reply = await create_users(api, path, users, fmt)
    assert failure(reply, 409, fmt) == f"users[1]: username user{unique}taken is taken"
    for user in (users[0], users[2]):
        absent = await api.call("GET", f"/user/{user['username']}", accept=fmt)
        assert failure(absent, 404, fmt) == f"user {user['username']} not found"
    assert await get_user(api, taken["username"]) == without_password(taken, taken_id)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", BATCH_PATHS)
async def test_create_with_bad_bodies(api: Api, unique: str, fmt: str, path: str) -> None:
    no_body = await api.call("POST", path, content_type=fmt, accept=fmt, api_key=api.static_key)
    assert failure(no_body, 400, fmt) == "a request body is required"
    blank = await api.call("POST", path, body=" ", content_type=fmt, accept=fmt, api_key=api.static_key)
    assert failure(blank, 400, fmt) == "a request body is required"
    empty = await create_users(api, path, [], fmt)
    assert failure(empty, 400, fmt) == "at least one user is required"
    unparseable = await api.call(
        "POST", path, body="[{<", content_type=fmt, accept=fmt, api_key=api.static_key
    )
    assert failure(unparseable, 400, fmt)
    for content_type in (None, "text/plain"):
        unsupported = await api.call(
            "POST",
            path,
            body=users_body([a_user(unique)], JSON),
            content_type=content_type,
            accept=fmt,
            api_key=api.static_key,
        )
        assert failure(unsupported, 415, fmt)
    no_key = await create_users(api, path, [a_user(unique)], fmt, key=False)
    assert failure(no_key, 401, fmt) == NO_KEY
    absent = await api.call("GET", f"/user/user{unique}", accept=fmt)
    assert failure(absent, 404, fmt) == f"user user{unique} not found"


async def test_create_with_a_json_object_instead_of_a_list_is_400(api: Api, unique: str) -> None:
    reply = await api.send("POST", "/user/createWithList", a_user(unique), JSON)
    assert failure(reply, 400, JSON) == "the request body must be a list"
    assert (await api.call("GET", f"/user/user{unique}")).status == 404


# --- GET /user/logout -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_logout_ends_that_session_only(api: Api, unique: str, fmt: str) -> None:
    await sign_up(api, a_user(unique))
    token = await login(api, f"user{unique}")
    other = await login(api, f"user{unique}")
    assert (await write_with(api, token, unique)).status == 200
    reply = await api.call("GET", "/user/logout", accept=fmt, api_key=token)
    assert success_message(reply, fmt) == "ok"
    after = await api.call(
        "POST", "/pet", body=json.dumps(a_pet(unique)), content_type=JSON, accept=fmt, api_key=token
    )
    assert failure(after, 401, fmt) == SESSION_ENDED
    again = await api.call("GET", "/user/logout", accept=fmt, api_key=token)
    assert success_message(again, fmt) == "ok"
    assert (await write_with(api, other, unique)).status == 200
    fresh = await login(api, f"user{unique}", fmt=fmt)
    assert (await write_with(api, fresh, unique)).status == 200
    assert (await write_with(api, token, unique)).status == 401


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("key", [None, "", "garbage", "a.b.c", "static"])
async def test_logout_without_a_session_is_ok(api: Api, unique: str, fmt: str, key: str | None) -> None:
    api_key = api.static_key if key == "static" else key
    reply = await api.call("GET", "/user/logout", accept=fmt, api_key=api_key)
    assert success_message(reply, fmt) == "ok"
    assert (await write_with(api, api.static_key, unique)).status == 200


# --- GET /user/{username} -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_get_user_never_shows_the_password(api: Api, unique: str, fmt: str) -> None:
    user = a_user(unique)
    user_id = await sign_up(api, user)
    assert await get_user(api, user["username"], fmt) == without_password(user, user_id)
    head = await api.call("HEAD", f"/user/{user['username']}", accept=fmt)
    assert (head.status, head.text) == (200, "")
    assert head.headers["Content-Type"].startswith(fmt)


@FIELD_RULE_MESSAGES
@pytest.mark.parametrize("fmt", FORMATS)
async def test_get_user_errors(api: Api, unique: str, fmt: str) -> None:
    unknown = await api.call("GET", f"/user/nobody{unique}", accept=fmt)
    assert failure(unknown, 404, fmt) == f"user nobody{unique} not found"
    head = await api.call("HEAD", f"/user/nobody{unique}", accept=fmt)
    assert (head.status, head.text) == (404, "")
    invalid = await api.call("GET", "/user/has space", accept=fmt)
    assert failure(invalid, 400, fmt) == "username: may contain only letters, digits and . _ - @"


# --- PUT /user/{username} -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_update_own_user(api: Api, unique: str, fmt: str) -> None:
    user_id = await sign_up(api, a_user(unique))
    token = await login(api, f"user{unique}")
    changed = a_user(unique, firstName="Annie", lastName="King", email=f"annie{unique}@example.test")
    del changed["password"]
    reply = await put_user(api, f"user{unique}", {**changed, "userStatus": 2, "id": user_id + 1}, fmt, token)
    assert success_message(reply, fmt) == str(user_id)
    # A customer's own id and userStatus are staff-managed: what it sent for them is ignored.
    assert await get_user(api, f"user{unique}", fmt) == without_password(changed, user_id)
    assert await login(api, f"user{unique}")  # no password in the body: the old one stays


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_new_password_replaces_the_old_one(api: Api, unique: str, fmt: str) -> None:
    await sign_up(api, a_user(unique))
    token = await login(api, f"user{unique}")
    reply = await put_user(api, f"user{unique}", a_user(unique, password="a new secret"), fmt, token)
    assert reply.status == 200, reply.text
    assert "a new secret" not in reply.text
    assert await login(api, f"user{unique}", "a new secret", fmt=fmt)
    assert await login_fails(api, f"user{unique}", PASSWORD, 400) == BAD_LOGIN


@pytest.mark.parametrize("fmt", FORMATS)
async def test_update_someone_else_is_403_but_a_static_key_may(api: Api, unique: str, fmt: str) -> None:
    ann = a_user(f"{unique}ann")
    ann_id = await sign_up(api, ann)
    await sign_up(api, a_user(f"{unique}bob"))
    bob = await login(api, f"user{unique}bob")
    hacked = {**ann, "firstName": "Hacked", "password": "taken over"}
    denied = await put_user(api, ann["username"], hacked, fmt, bob)
    assert failure(denied, 403, fmt) == NOT_THE_USER
    assert await get_user(api, ann["username"]) == without_password(ann, ann_id)
    assert await login_fails(api, ann["username"], "taken over", 400) == BAD_LOGIN
    by_key = await put_user(api, ann["username"], {**ann, "firstName": "Admin-set"}, fmt, api.static_key)
    assert success_message(by_key, fmt) == str(ann_id)
    assert (await get_user(api, ann["username"]))["firstName"] == "Admin-set"


@pytest.mark.parametrize("fmt", FORMATS)
async def test_rename(api: Api, unique: str, fmt: str) -> None:
    user_id = await sign_up(api, a_user(unique))
    await sign_up(api, a_user(f"{unique}bob"))
    token = await login(api, f"user{unique}")
    onto_taken = await put_user(api, f"user{unique}", a_user(f"{unique}bob"), fmt, token)
    assert failure(onto_taken, 409, fmt) == f"username user{unique}bob is taken"
    assert (await get_user(api, f"user{unique}"))["id"] == user_id
    renamed = a_user(f"{unique}new")
    reply = await put_user(api, f"user{unique}", renamed, fmt, token)
    assert success_message(reply, fmt) == str(user_id)
    old = await api.call("GET", f"/user/user{unique}", accept=fmt)
    assert failure(old, 404, fmt) == f"user user{unique} not found"
    assert await get_user(api, f"user{unique}new", fmt) == without_password(renamed, user_id)
    assert await login(api, f"user{unique}new")
    free_again = await sign_up(api, a_user(unique))  # the old name can be taken by someone new
    assert free_again != user_id


@FIELD_RULE_MESSAGES
@pytest.mark.parametrize("fmt", FORMATS)
async def test_update_user_errors(api: Api, unique: str, fmt: str) -> None:
    user = a_user(unique)
    user_id = await sign_up(api, user)
    unknown = await put_user(api, f"nobody{unique}", a_user(f"nobody{unique}"), fmt, api.static_key)
    assert failure(unknown, 404, fmt) == f"user nobody{unique} not found"
    no_key = await put_user(api, f"user{unique}", {**user, "firstName": "Nokey"}, fmt, None)
    assert failure(no_key, 401, fmt) == NO_KEY
    wrong_key = await put_user(api, f"user{unique}", {**user, "firstName": "Nokey"}, fmt, "guess")
    assert failure(wrong_key, 401, fmt) == "invalid api_key"
    bad_email = await put_user(api, f"user{unique}", {**user, "email": "nope"}, fmt, api.static_key)
    assert failure(bad_email, 400, fmt) == "email: must look like an email"
    bad_name = await put_user(api, f"user{unique}", {**user, "username": "has space"}, fmt, api.static_key)
    assert failure(bad_name, 400, fmt) == "username: may contain only letters, digits and . _ - @"
    unparseable = await api.call(
        "PUT", f"/user/user{unique}", body="<User", content_type=fmt, accept=fmt, api_key=api.static_key
    )
    assert failure(unparseable, 400, fmt)
    no_body = await api.call(
        "PUT", f"/user/user{unique}", content_type=fmt, accept=fmt, api_key=api.static_key
    )
    assert failure(no_body, 400, fmt) == "a request body is required"
    assert await get_user(api, f"user{unique}") == without_password(user, user_id)  # all left it alone


# --- DELETE /user/{username} ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_delete_own_user(api: Api, unique: str, fmt: str) -> None:
    await sign_up(api, a_user(unique))
    token = await login(api, f"user{unique}")
    reply = await api.call("DELETE", f"/user/user{unique}", accept=fmt, api_key=token)
    assert success_message(reply, fmt) == f"user{unique}"
    gone = await api.call("GET", f"/user/user{unique}", accept=fmt)
    assert failure(gone, 404, fmt) == f"user user{unique} not found"
    assert await login_fails(api, f"user{unique}", PASSWORD, 404) == f"user user{unique} not found"
    again = await api.call("DELETE", f"/user/user{unique}", accept=fmt, api_key=api.static_key)
    assert failure(again, 404, fmt) == f"user user{unique} not found"
    assert await sign_up(api, a_user(unique))  # the name is free again


@pytest.mark.parametrize("fmt", FORMATS)
async def test_delete_user_errors(api: Api, unique: str, fmt: str) -> None:
    ann = a_user(f"{unique}ann")
    ann_id = await sign_up(api, ann)
    await sign_up(api, a_user(f"{unique}bob"))
    bob = await login(api, f"user{unique}bob")
    denied = await api.call("DELETE", f"/user/{ann['username']}", accept=fmt, api_key=bob)
    assert failure(denied, 403, fmt) == NOT_THE_USER
    no_key = await api.call("DELETE", f"/user/{ann['username']}", accept=fmt)
    assert failure(no_key, 401, fmt) == NO_KEY
    absent = await api.call("DELETE", f"/user/nobody{unique}", accept=fmt, api_key=api.static_key)
    assert failure(absent, 404, fmt) == f"user nobody{unique} not found"
    assert await get_user(api, ann["username"]) == without_password(ann, ann_id)
    by_key = await api.call("DELETE", f"/user/{ann['username']}", accept=fmt, api_key=api.static_key)
    assert success_message(by_key, fmt) == ann["username"]
    assert (await api.call("GET", f"/user/{ann['username']}")).status == 404


async def test_a_deleted_users_sessions_end(api: Api, unique: str) -> None:
    await sign_up(api, a_user(unique))
    token = await login(api, f"user{unique}")
    other = await login(api, f"user{unique}")
    deleted = await api.call("DELETE", f"/user/user{unique}", api_key=token)
    assert deleted.status == 200, deleted.text
    # The gateway may trust a session it checked for up to 2 s (gateway/README.md).
    deadline = time.monotonic() + 3.0
    while True:
        replies = [await write_with(api, key, unique) for key in (token, other)]
        if all(reply.status == 401 for reply in replies) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.25)
    for reply in replies:
        assert failure(reply, 401, JSON) == SESSION_ENDED


@pytest.mark.since("user-service", "1.1.0")
@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_username_differing_only_in_case_is_taken(api: Api, unique: str, fmt: str) -> None:
    """`Bob` beside `bob`: refused at sign-up, in a batch and by a rename, as a taken name is."""
    bob = a_user(f"{unique}bob")
    bob_id = await sign_up(api, bob)
    twin = a_user(f"{unique}BOB")

    signed = await api.send("POST", "/user", twin, fmt, key=False)
    assert failure(signed, 409, fmt) == f"username user{unique}BOB is taken"
    batch = await create_users(api, BATCH_PATHS[0], [a_user(f"{unique}x0"), twin], fmt)
    assert failure(batch, 409, fmt) == f"users[1]: username user{unique}BOB is taken"
    assert (await api.call("GET", f"/user/user{unique}x0", accept=fmt)).status == 404
    await sign_up(api, a_user(f"{unique}eve"))
    token = await login(api, f"user{unique}eve")
    renamed = await put_user(api, f"user{unique}eve", a_user(f"{unique}Bob"), fmt, token)
    assert failure(renamed, 409, fmt) == f"username user{unique}Bob is taken"
    assert await get_user(api, bob["username"]) == without_password(bob, bob_id)


@pytest.mark.since("user-service", "1.1.0")
async def test_look_ups_find_a_user_whatever_the_case(api: Api, unique: str) -> None:
    bob = a_user(f"{unique}bob")
    bob_id = await sign_up(api, bob)
    shouted = f"USER{unique.upper()}BOB"

    assert await get_user(api, shouted) == without_password(bob, bob_id)
    token = await login(api, shouted)
    edited = await put_user(api, shouted, {**bob, "phone": "555-0100"}, JSON, token)
    assert success_message(edited, JSON) == str(bob_id)
    assert (await get_user(api, bob["username"]))["phone"] == "555-0100"
    deleted = await api.call("DELETE", f"/user/{shouted}", api_key=token)
    assert deleted.status == 200, deleted.text
    assert (await api.call("GET", f"/user/{bob['username']}")).status == 404
