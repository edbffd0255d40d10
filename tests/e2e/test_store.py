"""Orders through the gateway: POST /store/order and GET /store/order/{orderId}."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from tests.e2e.client import JSON, XML, Api, parse
from tests.e2e.control import StackControl
from tests.e2e.test_pets import a_pet, free_id

FORMATS = [JSON, XML]
RECOVERY_SECONDS = 2.0
"""How soon after a restarted service is healthy the stack must serve through it again."""


@pytest.fixture
async def pet_id(api: Api, unique: str) -> int:
    created = await api.send("POST", "/pet", a_pet(unique), JSON)
    assert created.status == 200, created.text
    return int(created.json["id"])


@pytest.mark.parametrize("fmt", FORMATS)
async def test_an_order_gets_defaults_and_reads_back(api: Api, pet_id: int, fmt: str) -> None:
    order = parse(await api.send("POST", "/store/order", {"petId": pet_id}, fmt), fmt)
    assert order["id"] > 0
    assert order["petId"] == pet_id
    assert order["quantity"] == 1
    assert order["status"] == "placed"
    assert order["complete"] is False
    for read_fmt in FORMATS:
        read = parse(
            await api.call("GET", f"/store/order/{order['id']}", accept=read_fmt, api_key=api.static_key),
            read_fmt,
        )
        assert read == order


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("given", "returned"),
    [
        ("2026-11-22T10:15:30Z", "2026-11-22T10:15:30.000Z"),
        ("2026-11-22T12:15:30.25+02:00", "2026-11-22T10:15:30.250Z"),
        ("2026-11-22T05:15:30.123456-05:00", "2026-11-22T10:15:30.123Z"),
    ],
)
async def test_ship_dates_come_back_in_utc_milliseconds(
    api: Api, pet_id: int, fmt: str, given: str, returned: str
) -> None:
    payload = {"petId": pet_id, "quantity": 3, "shipDate": given, "status": "approved", "complete": True}
    order = parse(await api.send("POST", "/store/order", payload, fmt), fmt)
    assert order["shipDate"] == returned
    assert (order["quantity"], order["status"], order["complete"]) == (3, "approved", True)
    assert (
        parse(await api.call("GET", f"/store/order/{order['id']}", api_key=api.static_key), JSON)["shipDate"]
        == returned
    )


INVALID_ORDERS: dict[str, dict[str, Any]] = {
    "no-petId": {"petId": None},
    "petId-type": {"petId": "seven"},
    "quantity-0": {"quantity": 0},
    "quantity-negative": {"quantity": -2},
    "quantity-type": {"quantity": "many"},
    "bad-status": {"status": "lost"},
    "bad-shipDate": {"shipDate": "yesterday"},
    "complete-type": {"complete": "perhaps"},
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("change", INVALID_ORDERS.values(), ids=INVALID_ORDERS.keys())
async def test_invalid_orders_are_400(api: Api, pet_id: int, fmt: str, change: dict[str, Any]) -> None:
    order = {k: v for k, v in {"petId": pet_id, **change}.items() if v is not None}
    reply = await api.send("POST", "/store/order", order, fmt)
    assert reply.status == 400, reply.text
    assert reply.error_message()


@pytest.mark.parametrize("fmt", FORMATS)
async def test_an_order_for_an_unknown_pet_is_404(api: Api, fmt: str) -> None:
    reply = await api.send("POST", "/store/order", {"petId": free_id()}, fmt)
    assert reply.status == 404, reply.text
    assert "not found" in reply.error_message()


@pytest.mark.parametrize("fmt", FORMATS)
async def test_get_order_errors(api: Api, fmt: str) -> None:
    for bad in ("abc", "1.5", str(2**70)):
        reply = await api.call("GET", f"/store/order/{bad}", accept=fmt, api_key=api.static_key)
        assert reply.status == 400, (bad, reply.text)
        assert reply.error_message()
    unknown = await api.call(
        "GET", f"/store/order/{random.randint(10**12, 2**62)}", accept=fmt, api_key=api.static_key
    )
    assert unknown.status == 404
    assert unknown.error_message()


async def test_placing_an_order_needs_an_api_key(api: Api, pet_id: int) -> None:
    reply = await api.send("POST", "/store/order", {"petId": pet_id}, JSON, key=False)
    assert reply.status == 401
    assert reply.error_message()


@pytest.mark.parametrize("fmt", FORMATS)
async def test_pet_service_down_is_503_not_404(
    api: Api, control: StackControl, pet_id: int, fmt: str
) -> None:
    control.stop_service("pet")
    try:
        order = await api.send("POST", "/store/order", {"petId": pet_id}, fmt)
        assert order.status == 503, order.text
        assert order.error_message()
        pet = await api.call("GET", f"/pet/{pet_id}", accept=fmt)
        assert pet.status == 503, pet.text
        assert pet.error_message()
    finally:
        control.start_service("pet")
    # The restarted service is healthy; the gateway's and the order service's channels find
    # it again within their reconnect backoff (at most 1 s). A fresh pet: on the embedded
    # store the restart forgot the earlier one.
    deadline = time.monotonic() + RECOVERY_SECONDS
    while True:
        new_pet = await api.send("POST", "/pet", a_pet(f"after-{pet_id}"), JSON)
        recovered = None
        if new_pet.status == 200:
            recovered = await api.send("POST", "/store/order", {"petId": new_pet.json["id"]}, fmt)
            if recovered.status == 200:
                break
        assert time.monotonic() < deadline, (new_pet.text, recovered and recovered.text)
        await asyncio.sleep(0.1)
