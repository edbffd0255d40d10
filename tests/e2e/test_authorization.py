"""Who may do what, end to end: every cell of the rules table in the README ("Who may do what"),
from the side of the caller who must be refused. Three kinds of caller: staff (the static key),
two customers (sessions from login) and anonymous (no key)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.e2e.callers import Cast, as_, keys, new_pet
from tests.e2e.client import JSON, XML, Api, Reply, parse
from tests.e2e.test_pet_catalogue import NO_KEY, failure, image_form, success_message
from tests.e2e.test_pets import a_pet
from tests.e2e.test_user_accounts import users_body
from tests.e2e.test_users import a_user, login

FORMATS = [JSON, XML]
STAFF_ONLY = "only staff may change the catalogue"
NOT_THE_USER = "only staff or the user itself may change this user"
BULK_STAFF_ONLY = "only staff may create users in bulk"
PUBLIC_FIELDS = {"id", "username"}


# --- the catalogue: anyone reads, only staff change ------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("who", ["anonymous", "customer", "staff"])
async def test_everyone_reads_the_catalogue(api: Api, cast: Cast, fmt: str, who: str) -> None:
    key = keys(api, cast)[who]
    pet_id = cast.pet["id"]
    assert parse(await as_(api, key, "GET", f"/pet/{pet_id}", fmt), fmt)["name"] == cast.pet["name"]
    for path, params in (
        ("/pet/findByStatus", {"status": "available"}),
        ("/pet/findByTags", {"tags": cast.pet["tags"][0]["name"]}),
        ("/store/inventory", {}),
    ):
        reply = await api.call("GET", path, params=params, accept=fmt, api_key=key)
        assert reply.status == 200, (path, reply.text)
        assert reply.headers["Content-Type"].startswith(fmt)


async def upload_as(api: Api, key: str | None, pet_id: int, fmt: str) -> Reply:
    headers = {"Accept": fmt} if key is None else {"Accept": fmt, "api_key": key}
    path = f"{api.base_url}/pet/{pet_id}/uploadImage"
    async with api.session.post(path, data=image_form(), headers=headers) as response:
        return Reply(response.status, response.headers, await response.text())


def catalogue_changes(pet: dict[str, Any], unique: str) -> list[tuple[str, str, Any, str]]:
    """(method, path, payload, XML root) of every change to the catalogue but the image upload."""
    return [
        ("POST", "/pet", a_pet(unique, name="Intruder"), "Pet"),
        ("PUT", "/pet", {**pet, "name": "Renamed"}, "Pet"),
        ("DELETE", f"/pet/{pet['id']}", None, ""),
    ]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("who", "status", "message"), [("anonymous", 401, NO_KEY), ("customer", 403, STAFF_ONLY)]
)
async def test_only_staff_change_the_catalogue(
    api: Api, cast: Cast, unique: str, fmt: str, who: str, status: int, message: str
) -> None:
    key = keys(api, cast)[who]
    for method, path, payload, root in catalogue_changes(cast.pet, unique):
        reply = await as_(api, key, method, path, fmt, payload, root)
        assert failure(reply, status, fmt) == message, (method, path)
    form = await api.call(
        "POST",
        f"/pet/{cast.pet['id']}",
        body="name=Renamed&status=sold",
        content_type="application/x-www-form-urlencoded",
        accept=fmt,
        api_key=key,
    )
    assert failure(form, status, fmt) == message
    assert failure(await upload_as(api, key, cast.pet["id"], fmt), status, fmt) == message
    # The pet is untouched, and no pet named Intruder appeared.
    assert parse(await api.call("GET", f"/pet/{cast.pet['id']}"), JSON) == cast.pet
    intruders = await api.call("GET", "/pet/findByTags", params={"tags": cast.pet["tags"][0]["name"]})
    assert [pet["name"] for pet in intruders.json] == [cast.pet["name"]]


@pytest.mark.parametrize("fmt", FORMATS)
async def test_staff_change_the_catalogue(api: Api, cast: Cast, unique: str, fmt: str) -> None:
    assert (await upload_as(api, api.static_key, cast.pet["id"], fmt)).status == 200
    for method, path, payload, root in catalogue_changes(cast.pet, unique):
        reply = await as_(api, api.static_key, method, path, fmt, payload, root)
        assert reply.status == 200, (method, path, reply.text)
    assert (await api.call("GET", f"/pet/{cast.pet['id']}")).status == 404


# --- orders: customers own theirs; staff see all ---------------------------------------------


async def place(api: Api, key: str | None, pet_id: int, fmt: str = JSON) -> Reply:
    return await as_(api, key, "POST", "/store/order", fmt, {"petId": pet_id, "quantity": 1}, "Order")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_placing_an_order_needs_a_key(api: Api, cast: Cast, fmt: str) -> None:
    assert failure(await place(api, None, cast.pet["id"], fmt), 401, fmt) == NO_KEY


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_customer_sees_and_deletes_only_its_own_orders(api: Api, cast: Cast, fmt: str) -> None:
    anns = parse(await place(api, cast.ann.token, cast.pet["id"], fmt), fmt)
    path = f"/store/order/{anns['id']}"
    assert "owner" not in json.dumps(anns).lower()  # the owner is not a field of the Order

    assert parse(await as_(api, cast.ann.token, "GET", path, fmt), fmt) == anns
    # Bob is told exactly what he would be told of an order that does not exist.
    absent = random.randint(10**12, 2**62)
    for target in (anns["id"], absent):
        for method in ("GET", "DELETE"):
            reply = await as_(api, cast.bob.token, method, f"/store/order/{target}", fmt)
            assert failure(reply, 404, fmt) == f"order {target} not found", (method, target)
    for method in ("GET", "DELETE"):
        assert failure(await as_(api, None, method, path, fmt), 401, fmt) == NO_KEY
    assert parse(await as_(api, api.static_key, "GET", path, fmt), fmt) == anns  # still there

    deleted = await as_(api, cast.ann.token, "DELETE", path, fmt)
    assert success_message(deleted, fmt) == str(anns["id"])
    assert (
        failure(await as_(api, api.static_key, "GET", path, fmt), 404, fmt) == f"order {anns['id']} not found"
    )


@pytest.mark.parametrize("fmt", FORMATS)
async def test_guessing_the_next_ids_finds_nothing(api: Api, cast: Cast, unique: str, fmt: str) -> None:
    """Ids are sequential: Bob's neighbours are Ann's orders, and he sees none of them."""
    pets = [(await new_pet(api, f"{unique}-{i}"))["id"] for i in range(3)]  # an order reserves its pet
    bobs = parse(await place(api, cast.bob.token, cast.pet["id"]), JSON)
    anns = [parse(await place(api, cast.ann.token, pet_id), JSON)["id"] for pet_id in pets]
    for order_id in range(bobs["id"] + 1, max(anns) + 1):
        reply = await as_(api, cast.bob.token, "GET", f"/store/order/{order_id}", fmt)
        assert reply.status == 404, (order_id, reply.text)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_staff_see_and_delete_any_order_and_own_none(
    api: Api, cast: Cast, unique: str, fmt: str
) -> None:
    anns = parse(await place(api, cast.ann.token, cast.pet["id"]), JSON)
    other_pet = await new_pet(api, f"{unique}-staff")  # an order reserves its pet
    staffs = parse(await place(api, api.static_key, other_pet["id"], fmt), fmt)

    staff_path = f"/store/order/{staffs['id']}"
    for customer in (cast.ann, cast.bob):  # an order staff placed belongs to no customer
        assert failure(await as_(api, customer.token, "GET", staff_path, fmt), 404, fmt)
    assert parse(await as_(api, api.static_key, "GET", f"/store/order/{anns['id']}", fmt), fmt) == anns
    for order in (anns, staffs):
        deleted = await as_(api, api.static_key, "DELETE", f"/store/order/{order['id']}", fmt)
        assert success_message(deleted, fmt) == str(order["id"])


# --- users: open sign-up, private accounts -------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("who", ["anonymous", "customer", "staff"])
async def test_anyone_signs_up_and_logs_in(api: Api, cast: Cast, unique: str, fmt: str, who: str) -> None:
    user = a_user(f"{unique}new")
    reply = await as_(api, keys(api, cast)[who], "POST", "/user", fmt, user, "User")
    assert reply.status == 200, reply.text
    assert await login(api, user["username"], fmt=fmt)


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_sign_up_gets_no_staff_managed_status_but_staff_may_set_it(
    api: Api, unique: str, fmt: str
) -> None:
    mine = a_user(f"{unique}self", userStatus=5)
    theirs = a_user(f"{unique}hired", userStatus=5)
    assert (await as_(api, None, "POST", "/user", fmt, mine, "User")).status == 200
    assert (await as_(api, api.static_key, "POST", "/user", fmt, theirs, "User")).status == 200
    stored = [
        parse(await as_(api, api.static_key, "GET", f"/user/{user['username']}", fmt), fmt)["userStatus"]
        for user in (mine, theirs)
    ]
    assert stored == [0, 5]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", ["/user/createWithArray", "/user/createWithList"])
@pytest.mark.parametrize(
    ("who", "status", "message"), [("anonymous", 401, NO_KEY), ("customer", 403, BULK_STAFF_ONLY)]
)
async def test_only_staff_create_users_in_bulk(
    api: Api, cast: Cast, unique: str, fmt: str, path: str, who: str, status: int, message: str
) -> None:
    users = [a_user(f"{unique}b{i}") for i in range(2)]
    payload = users_body(users, fmt)
    reply = await api.call(
        "POST", path, body=payload, content_type=fmt, accept=fmt, api_key=keys(api, cast)[who]
    )
    assert failure(reply, status, fmt) == message
    for user in users:
        assert (await api.call("GET", f"/user/{user['username']}")).status == 404
    by_staff = await api.call(
        "POST", path, body=payload, content_type=fmt, accept=fmt, api_key=api.static_key
    )
    assert success_message(by_staff, fmt) == "ok"


@pytest.mark.parametrize("fmt", FORMATS)
async def test_reading_a_user_shows_the_public_view_to_all_but_itself_and_staff(
    api: Api, cast: Cast, fmt: str
) -> None:
    path = f"/user/{cast.ann.username}"
    for key in (None, cast.bob.token):
        reply = await as_(api, key, "GET", path, fmt)
        assert parse(reply, fmt) == {"id": cast.ann.user_id, "username": cast.ann.username}
        assert "@example.test" not in reply.text
    for key in (cast.ann.token, api.static_key):
        full = parse(await as_(api, key, "GET", path, fmt), fmt)
        assert set(full) - PUBLIC_FIELDS == {"firstName", "lastName", "email", "phone", "userStatus"}
        assert full["email"].endswith("@example.test")
        assert "password" not in full
    stale = await as_(api, "not-a-session", "GET", path, fmt)
    assert failure(stale, 401, fmt) == "invalid api_key"


@pytest.mark.parametrize("fmt", FORMATS)
async def test_only_the_user_and_staff_change_or_delete_an_account(api: Api, cast: Cast, fmt: str) -> None:
    path = f"/user/{cast.ann.username}"
    change = {"username": cast.ann.username, "firstName": "Hacked", "email": "hacked@example.test"}
    assert failure(await as_(api, None, "PUT", path, fmt, change, "User"), 401, fmt) == NO_KEY
    assert failure(await as_(api, None, "DELETE", path, fmt), 401, fmt) == NO_KEY
    assert failure(await as_(api, cast.bob.token, "PUT", path, fmt, change, "User"), 403, fmt) == NOT_THE_USER
    assert failure(await as_(api, cast.bob.token, "DELETE", path, fmt), 403, fmt) == NOT_THE_USER
    # An account that does not exist is refused alike: a refusal tells nothing about who exists.
    nobody = await as_(api, cast.bob.token, "DELETE", f"/user/{cast.ann.username}zzz", fmt)
    assert failure(nobody, 403, fmt) == NOT_THE_USER
    shown = parse(await as_(api, api.static_key, "GET", path, fmt), fmt)
    assert shown["firstName"] != "Hacked"

    own = await as_(api, cast.ann.token, "PUT", path, fmt, {**change, "firstName": "Annie"}, "User")
    assert success_message(own, fmt) == str(cast.ann.user_id)
    by_staff = await as_(api, api.static_key, "PUT", path, fmt, {**change, "firstName": "Staffed"}, "User")
    assert success_message(by_staff, fmt) == str(cast.ann.user_id)
    assert success_message(await as_(api, cast.bob.token, "DELETE", f"/user/{cast.bob.username}", fmt), fmt)
    assert success_message(await as_(api, api.static_key, "DELETE", path, fmt), fmt) == cast.ann.username


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_customer_cannot_raise_its_own_status(api: Api, cast: Cast, fmt: str) -> None:
    path = f"/user/{cast.ann.username}"
    change = {
        "id": cast.ann.user_id + 1000,
        "username": cast.ann.username,
        "email": "ann@example.test",
        "userStatus": 9,
    }
    assert (await as_(api, cast.ann.token, "PUT", path, fmt, change, "User")).status == 200
    stored = parse(await as_(api, api.static_key, "GET", path, fmt), fmt)
    assert (stored["id"], stored["userStatus"]) == (cast.ann.user_id, 0)
    by_staff = await as_(api, api.static_key, "PUT", path, fmt, {**change, "userStatus": 9}, "User")
    assert by_staff.status == 200
    assert parse(await as_(api, api.static_key, "GET", path, fmt), fmt)["userStatus"] == 9


@pytest.mark.parametrize("fmt", FORMATS)
async def test_logout_ends_the_session_it_is_sent_with(api: Api, cast: Cast, fmt: str) -> None:
    path = f"/store/order/{parse(await place(api, cast.ann.token, cast.pet['id']), JSON)['id']}"
    assert success_message(await as_(api, cast.ann.token, "GET", "/user/logout", fmt), fmt) == "ok"
    stale = await as_(api, cast.ann.token, "GET", path, fmt)
    assert failure(stale, 401, fmt) == "the session has ended; log in again"
    assert (await as_(api, cast.bob.token, "GET", f"/user/{cast.bob.username}", fmt)).status == 200
