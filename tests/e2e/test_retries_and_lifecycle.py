"""Safe retries (Idempotency-Key on every create) and the order lifecycle, end to end."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest

from tests.e2e.callers import Cast, as_, new_pet
from tests.e2e.client import JSON, XML, Api, Reply, parse, to_xml
from tests.e2e.test_pet_catalogue import NO_KEY, failure, success_message
from tests.e2e.test_pets import a_pet
from tests.e2e.test_user_accounts import users_body
from tests.e2e.test_users import a_user

FORMATS = [JSON, XML]
KEY_HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
REUSED = "this Idempotency-Key was already used with a different request"
IN_PROGRESS = "a request with this Idempotency-Key is still being processed; retry later"


def a_key() -> str:
    return str(uuid.uuid4())


async def post(
    api: Api, path: str, payload: Any, fmt: str, *, key: str | None, api_key: str | None, root: str = ""
) -> Reply:
    if isinstance(payload, list):
        body = users_body(payload, fmt)
    else:
        body = json.dumps(payload) if fmt == JSON else to_xml(payload, root or None)
    headers = {KEY_HEADER: key} if key is not None else {}
    return await api.call(
        "POST", path, body=body, content_type=fmt, accept=fmt, api_key=api_key, headers=headers
    )


async def pets_tagged(api: Api, tag: str) -> list[dict[str, Any]]:
    reply = await api.call("GET", "/pet/findByTags", params={"tags": tag})
    pets: list[dict[str, Any]] = reply.json
    return pets


# --- Idempotency-Key ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_retried_pet_create_returns_the_same_pet_once(api: Api, unique: str, fmt: str) -> None:
    key, pet = a_key(), a_pet(unique)

    first = await post(api, "/pet", pet, fmt, key=key, api_key=api.static_key, root="Pet")
    retry = await post(api, "/pet", pet, fmt, key=key, api_key=api.static_key, root="Pet")

    assert (first.status, retry.status) == (200, 200), (first.text, retry.text)
    assert REPLAYED not in first.headers
    assert retry.headers[REPLAYED] == "true"
    assert parse(retry, fmt) == parse(first, fmt)
    assert len(await pets_tagged(api, f"tag-{unique}")) == 1
    another = await post(api, "/pet", pet, fmt, key=a_key(), api_key=api.static_key, root="Pet")
    assert parse(another, fmt)["id"] != parse(first, fmt)["id"]  # a new key is a new pet


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_retried_order_is_placed_once(api: Api, cast: Cast, fmt: str) -> None:
    key, order = a_key(), {"petId": cast.pet["id"], "quantity": 2}

    first = parse(
        await post(api, "/store/order", order, fmt, key=key, api_key=cast.ann.token, root="Order"), fmt
    )
    retry = await post(api, "/store/order", order, fmt, key=key, api_key=cast.ann.token, root="Order")

    assert retry.headers[REPLAYED] == "true"
    assert parse(retry, fmt) == first
    assert parse(await as_(api, cast.ann.token, "GET", f"/store/order/{first['id']}", fmt), fmt) == first


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_retried_sign_up_and_batch_create_once(api: Api, unique: str, fmt: str) -> None:
    key, user = a_key(), a_user(f"{unique}once")
    first = await post(api, "/user", user, fmt, key=key, api_key=None, root="User")
    retry = await post(api, "/user", user, fmt, key=key, api_key=None, root="User")
    assert success_message(retry, fmt) == success_message(first, fmt)
    assert retry.headers[REPLAYED] == "true"

    batch, batch_key = [a_user(f"{unique}b{i}") for i in range(2)], a_key()
    replies = [
        await post(api, "/user/createWithArray", batch, fmt, key=batch_key, api_key=api.static_key)
        for _ in range(2)
    ]
    assert [success_message(reply, fmt) for reply in replies] == ["ok", "ok"]
    assert [reply.headers.get(REPLAYED) for reply in replies] == [None, "true"]


async def test_twelve_racing_twins_with_one_key_make_one_pet(api: Api, unique: str) -> None:
    key, pet = a_key(), a_pet(unique)

    replies = await asyncio.gather(
        *(post(api, "/pet", pet, JSON, key=key, api_key=api.static_key) for _ in range(12))
    )

    statuses = sorted(reply.status for reply in replies)
    assert set(statuses) <= {200, 409}, [reply.text for reply in replies]
    done = [reply.json for reply in replies if reply.status == 200]
    assert done
    assert len({pet["id"] for pet in done}) == 1
    for reply in replies:
        if reply.status == 409:
            assert reply.error_message() == IN_PROGRESS
    assert len(await pets_tagged(api, f"tag-{unique}")) == 1


async def test_twelve_racing_twins_with_one_key_place_one_order(api: Api, cast: Cast) -> None:
    key, order = a_key(), {"petId": cast.pet["id"], "quantity": 1}

    replies = await asyncio.gather(
        *(post(api, "/store/order", order, JSON, key=key, api_key=cast.ann.token) for _ in range(12))
    )

    assert {reply.status for reply in replies} <= {200, 409}, [reply.text for reply in replies]
    assert len({reply.json["id"] for reply in replies if reply.status == 200}) == 1


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_key_reused_with_another_body_is_422_and_changes_nothing(
    api: Api, unique: str, fmt: str
) -> None:
    key = a_key()
    first = await post(api, "/pet", a_pet(unique), fmt, key=key, api_key=api.static_key, root="Pet")
    assert first.status == 200, first.text

    other = await post(
        api, "/pet", a_pet(unique, name="Other"), fmt, key=key, api_key=api.static_key, root="Pet"
    )

    assert failure(other, 422, fmt) == REUSED
    assert [pet["name"] for pet in await pets_tagged(api, f"tag-{unique}")] == [f"rex-{unique}"]


async def test_keys_of_two_callers_never_collide(api: Api, cast: Cast, unique: str) -> None:
    # A pet each (an order reserves its pet): were the key shared, the second and third orders
    # would be refused as the key reused with a different request, or replayed.
    pets = [cast.pet, await new_pet(api, f"{unique}-bob"), await new_pet(api, f"{unique}-staff")]
    key, orders = a_key(), [{"petId": pet["id"], "quantity": 1} for pet in pets]

    anns = await post(api, "/store/order", orders[0], JSON, key=key, api_key=cast.ann.token)
    bobs = await post(api, "/store/order", orders[1], JSON, key=key, api_key=cast.bob.token)
    staffs = await post(api, "/store/order", orders[2], JSON, key=key, api_key=api.static_key)

    assert [reply.status for reply in (anns, bobs, staffs)] == [200, 200, 200]
    assert len({reply.json["id"] for reply in (anns, bobs, staffs)}) == 3
    assert not any(REPLAYED in reply.headers for reply in (anns, bobs, staffs))
    for reply, customer in ((anns, cast.ann), (bobs, cast.bob)):  # each got its own order
        assert (await as_(api, customer.token, "GET", f"/store/order/{reply.json['id']}", JSON)).status == 200


@pytest.mark.parametrize("key", ["", "has space", "k" * 256, "tab\tkey"])
async def test_a_malformed_key_is_400_and_creates_nothing(api: Api, unique: str, key: str) -> None:
    reply = await post(api, "/pet", a_pet(unique), JSON, key=key, api_key=api.static_key)
    assert failure(reply, 400, JSON) == "Idempotency-Key must be 1 to 255 characters of visible ASCII"
    assert await pets_tagged(api, f"tag-{unique}") == []


async def test_a_refused_create_does_not_use_up_its_key(api: Api, cast: Cast) -> None:
    key = a_key()
    missing = await post(
        api, "/store/order", {"petId": 2**62, "quantity": 1}, JSON, key=key, api_key=cast.ann.token
    )
    assert missing.status == 404, missing.text
    fixed = await post(
        api, "/store/order", {"petId": cast.pet["id"], "quantity": 1}, JSON, key=key, api_key=cast.ann.token
    )
    assert fixed.status == 200, fixed.text
    assert REPLAYED not in fixed.headers


# --- the order lifecycle -------------------------------------------------------------------


async def place(api: Api, cast: Cast, customer_key: str, pet: dict[str, Any] | None = None) -> dict[str, Any]:
    """An order of the cast's pet (or of `pet`: an order reserves its pet, so a second live
    order needs a pet of its own)."""
    pet_id = (pet or cast.pet)["id"]
    reply = await post(
        api, "/store/order", {"petId": pet_id, "quantity": 1}, JSON, key=None, api_key=customer_key
    )
    order: dict[str, Any] = parse(reply, JSON)
    assert (order["status"], order["complete"]) == ("placed", False)
    return order


async def set_status(api: Api, key: str | None, order_id: int, status: str, fmt: str) -> Reply:
    return await as_(api, key, "PUT", f"/store/order/{order_id}", fmt, {"status": status}, "Order")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_staff_move_an_order_placed_approved_delivered(api: Api, cast: Cast, fmt: str) -> None:
    order = await place(api, cast, cast.ann.token)

    approved = parse(await set_status(api, api.static_key, order["id"], "approved", fmt), fmt)
    delivered = parse(await set_status(api, api.static_key, order["id"], "delivered", fmt), fmt)
    again = parse(await set_status(api, api.static_key, order["id"], "delivered", fmt), fmt)

    assert (approved["status"], approved["complete"]) == ("approved", False)
    assert (delivered["status"], delivered["complete"]) == ("delivered", True)
    assert again == delivered  # asking for the status it has changes nothing
    assert parse(await as_(api, cast.ann.token, "GET", f"/store/order/{order['id']}", fmt), fmt) == delivered


REFUSED_MOVES = [
    ((), "delivered", "is placed: it can move to approved only"),
    (("approved",), "placed", "is approved: it can move to delivered only"),
    (("approved", "delivered"), "approved", "is delivered: it cannot move on"),
    (("approved", "delivered"), "placed", "is delivered: it cannot move on"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("path", "target", "message"), REFUSED_MOVES)
async def test_every_other_move_is_409_naming_what_is_allowed(
    api: Api,
    cast: Cast,
    fmt: str,
    path: tuple[str, ...],
    target: str,
    message: str,
) -> None:
    order = await place(api, cast, cast.ann.token)
    for status in path:
        assert (await set_status(api, api.static_key, order["id"], status, JSON)).status == 200
    before = parse(await as_(api, api.static_key, "GET", f"/store/order/{order['id']}", JSON), JSON)

    refused = await set_status(api, api.static_key, order["id"], target, fmt)

    assert failure(refused, 409, fmt) == f"order {order['id']} {message}"
    assert parse(await as_(api, api.static_key, "GET", f"/store/order/{order['id']}", JSON), JSON) == before


@pytest.mark.parametrize("fmt", FORMATS)
async def test_only_staff_move_orders(api: Api, cast: Cast, fmt: str) -> None:
    order = await place(api, cast, cast.ann.token)

    assert failure(await set_status(api, cast.ann.token, order["id"], "approved", fmt), 403, fmt) == (
        "only staff may move an order on"
    )
    assert failure(await set_status(api, None, order["id"], "approved", fmt), 401, fmt) == NO_KEY
    read = parse(await as_(api, cast.ann.token, "GET", f"/store/order/{order['id']}", fmt), fmt)
    assert read["status"] == "placed"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fields", [{"status": "approved"}, {"status": "delivered"}, {"complete": True}])
async def test_a_customers_new_order_is_always_placed_and_open(
    api: Api,
    cast: Cast,
    fmt: str,
    fields: dict[str, Any],
) -> None:
    order = {"petId": cast.pet["id"], "quantity": 1, **fields}
    refused = await post(api, "/store/order", order, fmt, key=None, api_key=cast.ann.token, root="Order")
    assert (
        failure(refused, 400, fmt)
        == "a new order is placed and not complete: status and complete are set by staff"
    )
    by_staff = parse(
        await post(api, "/store/order", order, fmt, key=None, api_key=api.static_key, root="Order"), fmt
    )
    assert {name: by_staff[name] for name in fields} == fields


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_customer_cancels_only_while_placed_and_staff_any_time(
    api: Api, cast: Cast, unique: str, fmt: str
) -> None:
    placed = await place(api, cast, cast.ann.token)
    approved = await place(api, cast, cast.ann.token, await new_pet(api, f"{unique}-2"))
    assert (await set_status(api, api.static_key, approved["id"], "approved", JSON)).status == 200

    cancelled = await as_(api, cast.ann.token, "DELETE", f"/store/order/{placed['id']}", fmt)
    too_late = await as_(api, cast.ann.token, "DELETE", f"/store/order/{approved['id']}", fmt)

    assert success_message(cancelled, fmt) == str(placed["id"])
    assert (
        failure(too_late, 409, fmt)
        == f"order {approved['id']} is approved: only a placed order can be cancelled"
    )
    assert success_message(
        await as_(api, api.static_key, "DELETE", f"/store/order/{approved['id']}", fmt), fmt
    )
    for order in (placed, approved):
        assert (await as_(api, api.static_key, "GET", f"/store/order/{order['id']}", JSON)).status == 404
