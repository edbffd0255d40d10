"""GET /store/order end to end: a customer's own orders, staff's view of every order, filters,
pages, JSON and XML. The refusals are tested from the side of the caller who must be refused:
another customer, a customer naming someone else, anonymous, a forged or foreign page token."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.callers import Cast, as_, new_pet
from tests.e2e.client import JSON, XML, Api, Reply, from_xml

FORMATS = [JSON, XML]


def orders_of(reply: Reply, fmt: str) -> list[dict[str, Any]]:
    assert reply.status == 200, (reply.status, reply.text)
    assert reply.headers["Content-Type"].startswith(fmt)
    if fmt == JSON:
        body: list[dict[str, Any]] = reply.json
        return body
    root = reply.xml
    assert root.tag == "orders", reply.text
    assert all(child.tag == "Order" for child in root), reply.text
    return [from_xml(child) for child in root]


async def place(api: Api, key: str, pet_id: int) -> dict[str, Any]:
    reply = await as_(api, key, "POST", "/store/order", JSON, {"petId": pet_id}, "Order")
    assert reply.status == 200, reply.text
    order: dict[str, Any] = reply.json
    return order


async def listing(api: Api, key: str | None, query: str = "", fmt: str = JSON) -> Reply:
    return await api.call("GET", f"/store/order{query}", accept=fmt, api_key=key)


@pytest.fixture
async def placed(api: Api, cast: Cast, unique: str) -> dict[str, list[dict[str, Any]]]:
    """Ann's two orders, Bob's one, and one placed by staff, each for a pet of its own (an order
    reserves its pet), the first for the cast's pet (each in the order it was placed: with
    several order-service replicas, each drawing ids from blocks of its own, a later order may
    have the smaller id)."""
    pets = [cast.pet["id"]] + [(await new_pet(api, f"{unique}-{i}"))["id"] for i in range(1, 4)]
    ann = [await place(api, cast.ann.token, pet_id) for pet_id in pets[:2]]
    bob = [await place(api, cast.bob.token, pets[2])]
    staff = [await place(api, api.static_key, pets[3])]
    return {"ann": ann, "bob": bob, "staff": staff}


@pytest.fixture
def orders(placed: dict[str, list[dict[str, Any]]]) -> dict[str, list[int]]:
    """The ids of `placed`'s orders."""
    return {who: [order["id"] for order in theirs] for who, theirs in placed.items()}


@pytest.fixture
def pet_of(placed: dict[str, list[dict[str, Any]]]) -> dict[int, int]:
    """The pet of each of `placed`'s orders, by the order's id."""
    return {order["id"]: order["petId"] for theirs in placed.values() for order in theirs}


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_customer_lists_its_own_orders_only(
    api: Api, cast: Cast, orders: dict[str, list[int]], pet_of: dict[int, int], fmt: str
) -> None:
    ann = orders_of(await listing(api, cast.ann.token, fmt=fmt), fmt)
    bob = orders_of(await listing(api, cast.bob.token, fmt=fmt), fmt)

    assert [order["id"] for order in ann] == sorted(orders["ann"])  # lists are in id order
    assert [order["id"] for order in bob] == orders["bob"]
    assert ann[0] == {
        "id": min(orders["ann"]),
        "petId": pet_of[min(orders["ann"])],
        "quantity": 1,
        "status": "placed",
        "complete": False,
    }


async def test_a_customer_naming_another_username_is_refused(
    api: Api, cast: Cast, orders: dict[str, list[int]]
) -> None:
    for fmt in FORMATS:
        reply = await listing(api, cast.ann.token, f"?username={cast.bob.username}", fmt)
        assert (reply.status, reply.error_message()) == (403, "a customer lists only its own orders")
    own = await listing(api, cast.ann.token, f"?username={cast.ann.username}")
    assert [order["id"] for order in orders_of(own, JSON)] == sorted(orders["ann"])


async def test_anonymous_and_logged_out_callers_get_401(
    api: Api, cast: Cast, orders: dict[str, list[int]]
) -> None:
    anonymous = await listing(api, None)
    logged_out = await api.call("GET", "/user/logout", api_key=cast.bob.token)
    after_logout = await listing(api, cast.bob.token)

    assert anonymous.status == 401
    assert logged_out.status == 200
    assert after_logout.status == 401


async def test_staff_see_every_order_and_filter_by_username_status_and_pet(
    api: Api, cast: Cast, orders: dict[str, list[int]], pet_of: dict[int, int]
) -> None:
    every = orders["ann"] + orders["bob"] + orders["staff"]  # each for a pet of its own

    async def ids(query: str) -> list[int]:
        return [order["id"] for order in orders_of(await listing(api, api.static_key, query), JSON)]

    by_pet = [await ids(f"?petId={pet_of[order_id]}") for order_id in every]
    bobs = await ids(f"?username={cast.bob.username}")
    moved = await api.call(
        "PUT",
        f"/store/order/{orders['ann'][1]}",
        body='{"status": "approved"}',
        content_type=JSON,
        api_key=api.static_key,
    )
    approved = [await ids(f"?petId={pet_of[order_id]}&status=approved") for order_id in every]
    either = [
        await ids(f"?petId={pet_of[order_id]}&status[]=approved&status[]=delivered") for order_id in every
    ]
    anns_placed = orders_of(await listing(api, cast.ann.token, "?status=placed"), JSON)

    assert by_pet == [[order_id] for order_id in every]
    assert bobs == orders["bob"]
    assert moved.status == 200
    only_anns_second = [[order_id] if order_id == orders["ann"][1] else [] for order_id in every]
    assert approved == only_anns_second == either
    assert [o["id"] for o in anns_placed] == [orders["ann"][0]]


async def test_pages_follow_the_next_page_token(
    api: Api, cast: Cast, unique: str, orders: dict[str, list[int]]
) -> None:
    # Four orders of Ann's (two more, each for a pet of its own), a page each.
    more = [(await new_pet(api, f"{unique}-more{i}"))["id"] for i in range(2)]
    anns = orders["ann"] + [(await place(api, cast.ann.token, pet_id))["id"] for pet_id in more]
    filtered = f"?username={cast.ann.username}&limit=1"
    seen: list[int] = []
    query = filtered
    for _ in range(10):
        reply = await listing(api, api.static_key, query)
        seen += [order["id"] for order in orders_of(reply, JSON)]
        token = reply.headers.get("X-Next-Page-Token")
        if token is None:
            break
        query = f"{filtered}&pageToken={token}"

    assert seen == sorted(anns)


async def test_a_page_token_is_no_key_to_another_list(
    api: Api, cast: Cast, orders: dict[str, list[int]]
) -> None:
    anns_first = await listing(api, cast.ann.token, "?limit=1")
    token = anns_first.headers["X-Next-Page-Token"]

    as_bob = await listing(api, cast.bob.token, f"?limit=1&pageToken={token}")
    forged = await listing(api, cast.ann.token, "?limit=1&pageToken=not-a-token")

    assert (as_bob.status, as_bob.error_message()) == (400, "pageToken does not belong to this filter")
    assert (forged.status, forged.error_message()) == (400, "pageToken is invalid")


@pytest.mark.parametrize(
    ("query", "status"),
    [("?status=shipped", 400), ("?petId=x", 400), ("?limit=1001", 400), ("?username=nobody-at-all", 404)],
)
async def test_bad_filters(api: Api, cast: Cast, query: str, status: int) -> None:
    reply = await listing(api, cast.ann.token, query)
    assert reply.status == status, reply.text
    assert reply.error_message()
