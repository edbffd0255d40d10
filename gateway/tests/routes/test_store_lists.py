"""GET /v2/store/order: the gateway's part of order lists (filters, paging, the owner's name,
both formats); who may see what is the order service's, here played by the fake."""

from __future__ import annotations

import pytest

from petstore.order.v1 import order_pb2
from petstore.user.v1 import user_pb2
from petstore_common import callers

from ..conftest import STATIC_KEY, Client
from ..fakes import FakeBackend, StoredUser
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
WIRES = pytest.mark.parametrize("wire", list(Wire))
PLACED = order_pb2.ORDER_STATUS_PLACED
APPROVED = order_pb2.ORDER_STATUS_APPROVED
DELIVERED = order_pb2.ORDER_STATUS_DELIVERED
ANN, BOB = 7, 8


@pytest.fixture
def shop(backend: FakeBackend) -> FakeBackend:
    """Ann (7) has orders 1 and 3, Bob (8) order 2, staff's order 4 is nobody's."""
    for order_id, owner, pet_id, status in (
        (1, ANN, 9, PLACED),
        (2, BOB, 9, APPROVED),
        (3, ANN, 5, DELIVERED),
    ):
        backend.order.orders[order_id] = order_pb2.Order(
            id=order_id, pet_id=pet_id, quantity=1, status=status, owner_user_id=owner
        )
    backend.order.orders[4] = order_pb2.Order(id=4, pet_id=9, quantity=1, status=PLACED)
    for user_id, name in ((ANN, "ann"), (BOB, "bob")):
        backend.user.users[name] = StoredUser(user_pb2.User(id=user_id, username=name), "pw")
    return backend


def session(backend: FakeBackend, user_id: int, name: str) -> dict[str, str]:
    return {"api_key": backend.user.open_session(user_id, name)}


@WIRES
async def test_staff_list_every_order_in_id_order(client: Client, shop: FakeBackend, wire: Wire) -> None:
    response = await client.get("/v2/store/order", headers={**KEY, "Accept": wire.value})

    assert response.status == 200
    body = await wire.read(response)
    assert [order["id"] for order in body] == [1, 2, 3, 4]
    assert body[1] == {"id": 2, "petId": 9, "quantity": 1, "status": "approved", "complete": False}


async def test_the_xml_list_is_an_orders_element_of_order_elements(client: Client, shop: FakeBackend) -> None:
    response = await client.get(
        "/v2/store/order?status=approved", headers={**KEY, "Accept": "application/xml"}
    )

    text = await response.text()
    assert "<orders><Order><id>2</id><petId>9</petId>" in text
    assert text.rstrip().endswith("</Order></orders>")


async def test_a_customer_gets_its_own_orders(client: Client, shop: FakeBackend) -> None:
    response = await client.get("/v2/store/order", headers=session(shop, ANN, "ann"))

    assert [order["id"] for order in await response.json()] == [1, 3]
    assert shop.order.callers[-1] == callers.customer(ANN)


@WIRES
async def test_a_customer_naming_another_username_is_refused(
    client: Client, shop: FakeBackend, wire: Wire
) -> None:
    response = await client.get(
        "/v2/store/order?username=bob", headers={**session(shop, ANN, "ann"), "Accept": wire.value}
    )

    assert await error_of(wire, response) == (403, "a customer lists only its own orders")
    assert shop.order.last_list is not None
    assert shop.order.last_list.owner_user_id == BOB


async def test_staff_filter_by_username(client: Client, shop: FakeBackend) -> None:
    response = await client.get("/v2/store/order?username=bob", headers=KEY)

    assert [order["id"] for order in await response.json()] == [2]


async def test_an_unknown_username_is_404(client: Client, shop: FakeBackend) -> None:
    response = await client.get("/v2/store/order?username=nobody", headers=KEY)

    assert await error_of(Wire.JSON, response) == (404, "user nobody not found")
    assert shop.order.last_list is None


@WIRES
async def test_listing_orders_anonymously_is_401(client: Client, shop: FakeBackend, wire: Wire) -> None:
    response = await client.get("/v2/store/order", headers={"Accept": wire.value})

    assert await error_of(wire, response) == (
        401,
        "api_key header (or Authorization: Bearer) is required for this operation",
    )
    assert shop.order.callers == []


@pytest.mark.parametrize(
    "query",
    [
        "status=placed,delivered",
        "status=placed&status=delivered",
        "status[]=placed&status[]=delivered",
        "status[0]=placed&status[1]=delivered",
    ],
)
async def test_statuses_in_every_array_form(client: Client, shop: FakeBackend, query: str) -> None:
    response = await client.get(f"/v2/store/order?{query}", headers=KEY)

    assert [order["id"] for order in await response.json()] == [1, 3, 4]
    assert shop.order.last_list is not None
    assert list(shop.order.last_list.statuses) == [PLACED, DELIVERED]


async def test_pet_filter(client: Client, shop: FakeBackend) -> None:
    response = await client.get("/v2/store/order?petId=5", headers=KEY)

    assert [order["id"] for order in await response.json()] == [3]


async def test_pages_carry_the_next_page_token(client: Client, shop: FakeBackend) -> None:
    first = await client.get("/v2/store/order?limit=3", headers=KEY)
    token = first.headers["X-Next-Page-Token"]
    second = await client.get(f"/v2/store/order?limit=3&pageToken={token}", headers=KEY)

    assert [order["id"] for order in await first.json()] == [1, 2, 3]
    assert [order["id"] for order in await second.json()] == [4]
    assert "X-Next-Page-Token" not in second.headers
    assert shop.order.last_list is not None
    assert (shop.order.last_list.page_size, shop.order.last_list.page_token) == (3, token)


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
async def test_bad_queries_are_400(client: Client, shop: FakeBackend, query: str, message: str) -> None:
    response = await client.get(f"/v2/store/order?{query}", headers=KEY)

    status, text = await error_of(Wire.JSON, response)
    assert (status, text[: len(message)]) == (400, message)
    assert shop.order.last_list is None
