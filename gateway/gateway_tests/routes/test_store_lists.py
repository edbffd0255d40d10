"""GET /v2/store/order: the gateway's part of order lists (filters, paging, the owner's name,
both formats); who may see what is the order service's own rule."""

from __future__ import annotations

import pytest

from ..backend import APPROVED, DELIVERED, PLACED, Backend
from ..conftest import STATIC_KEY, Client
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
WIRES = pytest.mark.parametrize("wire", list(Wire))
ANN, BOB = 7, 8


@pytest.fixture
async def shop(backend: Backend) -> Backend:
    """Ann (7) has orders 1 and 3, Bob (8) order 2, staff's order 4 is nobody's; each is for a
    pet of its own (a pet is sold once)."""
    for user_id, name in ((ANN, "ann"), (BOB, "bob")):
        await backend.add_user(name, user_id)
    for pet_id in (6, 9, 5, 12):
        await backend.add_pet(pet_id)
    for owner, pet_id, status in ((ANN, 6, PLACED), (BOB, 9, APPROVED), (ANN, 5, DELIVERED)):
        await backend.add_order(pet_id, owner=owner, status=status)
    await backend.add_order(12, order_id=4)
    backend.calls.clear()
    return backend


async def session(backend: Backend, name: str) -> dict[str, str]:
    return {"api_key": await backend.login(name)}


@WIRES
async def test_staff_list_every_order_in_id_order(client: Client, shop: Backend, wire: Wire) -> None:
    response = await client.get("/v2/store/order", headers={**KEY, "Accept": wire.value})

    assert response.status == 200
    body = await wire.read(response)
    assert [order["id"] for order in body] == [1, 2, 3, 4]
    assert body[1] == {"id": 2, "petId": 9, "quantity": 1, "status": "approved", "complete": False}


async def test_the_xml_list_is_an_orders_element_of_order_elements(client: Client, shop: Backend) -> None:
    response = await client.get(
        "/v2/store/order?status=approved", headers={**KEY, "Accept": "application/xml"}
    )

    text = await response.text()
    assert "<orders><Order><id>2</id><petId>9</petId>" in text
    assert text.rstrip().endswith("</Order></orders>")


async def test_a_customer_gets_its_own_orders(client: Client, shop: Backend) -> None:
    response = await client.get("/v2/store/order", headers=await session(shop, "ann"))

    assert [order["id"] for order in await response.json()] == [1, 3]


@WIRES
async def test_a_customer_naming_another_username_is_refused(
    client: Client, shop: Backend, wire: Wire
) -> None:
    response = await client.get(
        "/v2/store/order?username=bob", headers={**await session(shop, "ann"), "Accept": wire.value}
    )

    # The order service's refusal: it was asked for Bob's orders by Ann.
    assert await error_of(wire, response) == (403, "a customer lists only its own orders")


async def test_staff_filter_by_username(client: Client, shop: Backend) -> None:
    response = await client.get("/v2/store/order?username=bob", headers=KEY)

    assert [order["id"] for order in await response.json()] == [2]


async def test_an_unknown_username_is_404(client: Client, shop: Backend) -> None:
    response = await client.get("/v2/store/order?username=nobody", headers=KEY)

    assert await error_of(Wire.JSON, response) == (404, "user nobody not found")
    assert shop.calls.to("OrderService") == []


@WIRES
async def test_listing_orders_anonymously_is_401(client: Client, shop: Backend, wire: Wire) -> None:
    response = await client.get("/v2/store/order", headers={"Accept": wire.value})

    assert await error_of(wire, response) == (
        401,
        "api_key header (or Authorization: Bearer) is required for this operation",
    )
    assert shop.calls.to("OrderService") == []


@pytest.mark.parametrize(
    "query",
    [
        "status=placed,delivered",
        "status=placed&status=delivered",
        "status[]=placed&status[]=delivered",
        "status[0]=placed&status[1]=delivered",
    ],
)
async def test_statuses_in_every_array_form(client: Client, shop: Backend, query: str) -> None:
    response = await client.get(f"/v2/store/order?{query}", headers=KEY)

    assert [order["id"] for order in await response.json()] == [1, 3, 4]


async def test_pet_filter(client: Client, shop: Backend) -> None:
    response = await client.get("/v2/store/order?petId=5", headers=KEY)

    assert [order["id"] for order in await response.json()] == [3]


async def test_pages_carry_the_next_page_token(client: Client, shop: Backend) -> None:
    first = await client.get("/v2/store/order?limit=3", headers=KEY)
    token = first.headers["X-Next-Page-Token"]
    second = await client.get(f"/v2/store/order?limit=3&pageToken={token}", headers=KEY)

    assert [order["id"] for order in await first.json()] == [1, 2, 3]
    assert [order["id"] for order in await second.json()] == [4]
    assert "X-Next-Page-Token" not in second.headers


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("status=shipped", "status must be one of placed, approved, delivered"),
        ("status[x]=placed", "malformed status[...] query parameter"),
        ("petId=0", "Invalid ID supplied: petId must be a positive 64-bit integer"),
        ("limit=0", "limit must be an integer from 1 to 1000"),
        ("username=", "username must not be empty"),
    ],
)
async def test_bad_queries_are_400(client: Client, shop: Backend, query: str, message: str) -> None:
    response = await client.get(f"/v2/store/order?{query}", headers=KEY)

    status, text = await error_of(Wire.JSON, response)
    assert (status, text[: len(message)]) == (400, message)
    assert shop.calls.to("OrderService") == []
