"""The store beyond the core: GET /store/inventory and DELETE /store/order/{orderId}."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.e2e.client import JSON, XML, Api, from_xml, parse
from tests.e2e.test_pet_catalogue import NO_KEY, create, failure, post_form, success_message
from tests.e2e.test_pets import a_pet, free_id

FORMATS = [JSON, XML]
STATUSES = ("available", "pending", "sold")


async def inventory(api: Api, fmt: str = JSON) -> dict[str, int]:
    """Counts per pet status: a JSON object, or <inventory><available>3</available>…</inventory>."""
    reply = await api.call("GET", "/store/inventory", accept=fmt)
    assert reply.status == 200, reply.text
    assert reply.headers["Content-Type"].startswith(fmt), reply.headers["Content-Type"]
    if fmt == JSON:
        counts: dict[str, int] = reply.json
    else:
        root = reply.xml
        assert root.tag == "inventory", reply.text
        counts = from_xml(root)
    assert set(counts) == set(STATUSES), counts
    assert all(isinstance(count, int) and count >= 0 for count in counts.values()), counts
    return counts


@pytest.fixture(autouse=True)
async def stack_ready(api: Api) -> None:
    """Start from a ready stack: test_store.py restarts the pet service just before this module,
    and the gateway's and the order service's channels reconnect within about a second."""
    deadline = time.monotonic() + 10
    while True:
        async with api.session.get(api.base_url.removesuffix("/v2") + "/readyz") as ready:
            probe = await api.send("POST", "/store/order", {"petId": free_id()}, JSON)
            if ready.status == 200 and probe.status == 404:
                return
        assert time.monotonic() < deadline, ("stack not ready", ready.status, probe.text)
        await asyncio.sleep(0.1)


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {status: after[status] - before[status] for status in STATUSES}


@pytest.mark.parametrize("fmt", FORMATS)
async def test_inventory_counts_follow_the_pets(api: Api, unique: str, fmt: str) -> None:
    start = await inventory(api, fmt)
    pending = [await create(api, a_pet(f"{unique}-{i}", status="pending")) for i in range(2)]
    sold = await create(api, a_pet(unique, status="sold"))
    await create(api, a_pet(unique, status="available"))
    added = await inventory(api, fmt)
    assert delta(start, added) == {"available": 1, "pending": 2, "sold": 1}
    assert await inventory(api, JSON if fmt == XML else XML) == added  # one count, either format

    changed = await post_form(api, pending[0]["id"], {"status": "sold"}, JSON)
    assert changed.status == 200, changed.text
    assert delta(start, await inventory(api, fmt)) == {"available": 1, "pending": 1, "sold": 2}

    deleted = await api.call("DELETE", f"/pet/{sold['id']}", api_key=api.static_key)
    assert deleted.status == 200, deleted.text
    assert delta(start, await inventory(api, fmt)) == {"available": 1, "pending": 1, "sold": 1}


async def test_a_pet_without_a_status_is_not_counted(api: Api, unique: str) -> None:
    start = await inventory(api)
    pet = {key: value for key, value in a_pet(unique).items() if key != "status"}
    created = await create(api, pet)
    assert "status" not in created
    assert delta(start, await inventory(api)) == {"available": 0, "pending": 0, "sold": 0}


async def test_inventory_is_open_and_answers_head(api: Api) -> None:
    counts = await inventory(api)
    for fmt in FORMATS:
        head = await api.call("HEAD", "/store/inventory", accept=fmt)
        assert head.status == 200
        assert head.text == ""
        assert head.headers["Content-Type"].startswith(fmt)
    assert await inventory(api) == counts


# --- DELETE /store/order/{orderId} ----------------------------------------------------------


async def place_order(api: Api, unique: str) -> dict[str, Any]:
    """An order of a new pet of its own (an order reserves its pet)."""
    pet = await create(api, a_pet(unique))
    reply = await api.send("POST", "/store/order", {"petId": pet["id"], "quantity": 2}, JSON)
    assert reply.status == 200, reply.text
    order: dict[str, Any] = reply.json
    return order


@pytest.mark.parametrize("fmt", FORMATS)
async def test_delete_order(api: Api, unique: str, fmt: str) -> None:
    order = await place_order(api, unique)
    path = f"/store/order/{order['id']}"
    assert parse(await api.call("GET", path, accept=fmt, api_key=api.static_key), fmt) == order
    deleted = await api.call("DELETE", path, accept=fmt, api_key=api.static_key)
    assert success_message(deleted, fmt) == str(order["id"])
    gone = await api.call("GET", path, accept=fmt, api_key=api.static_key)
    assert failure(gone, 404, fmt) == f"order {order['id']} not found"
    again = await api.call("DELETE", path, accept=fmt, api_key=api.static_key)
    assert failure(again, 404, fmt) == f"order {order['id']} not found"
    head = await api.call("HEAD", path, accept=fmt, api_key=api.static_key)
    assert (head.status, head.text) == (404, "")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_deleting_an_order_leaves_its_pet_and_other_orders(api: Api, unique: str, fmt: str) -> None:
    first = await place_order(api, unique)
    second = await place_order(api, f"{unique}-2")
    deleted = await api.call("DELETE", f"/store/order/{first['id']}", accept=fmt, api_key=api.static_key)
    assert success_message(deleted, fmt) == str(first["id"])
    assert (
        parse(await api.call("GET", f"/store/order/{second['id']}", api_key=api.static_key), JSON) == second
    )
    assert (await api.call("GET", f"/pet/{first['petId']}")).status == 200


@pytest.mark.parametrize("fmt", FORMATS)
async def test_delete_order_errors(api: Api, unique: str, fmt: str) -> None:
    absent = free_id()
    unknown = await api.call("DELETE", f"/store/order/{absent}", accept=fmt, api_key=api.static_key)
    assert failure(unknown, 404, fmt) == f"order {absent} not found"
    for bad_id in ("abc", "1.5", "0", "-4", str(2**64)):
        bad = await api.call("DELETE", f"/store/order/{bad_id}", accept=fmt, api_key=api.static_key)
        assert failure(bad, 400, fmt).startswith("Invalid ID supplied"), bad_id
    order = await place_order(api, unique)
    no_key = await api.call("DELETE", f"/store/order/{order['id']}", accept=fmt)
    assert failure(no_key, 401, fmt) == NO_KEY
    wrong_key = await api.call("DELETE", f"/store/order/{order['id']}", accept=fmt, api_key="nope")
    assert failure(wrong_key, 401, fmt) == "invalid api_key"
    assert (
        parse(await api.call("GET", f"/store/order/{order['id']}", api_key=api.static_key), JSON) == order
    )  # still there


@pytest.mark.parametrize("fmt", FORMATS)
async def test_head_on_an_order(api: Api, unique: str, fmt: str) -> None:
    order = await place_order(api, unique)
    for path, status in ((f"/store/order/{order['id']}", 200), ("/store/order/abc", 400)):
        head = await api.call("HEAD", path, accept=fmt, api_key=api.static_key)
        assert head.status == status, path
        assert head.text == "", path
        assert head.headers["Content-Type"].startswith(fmt), path
