from __future__ import annotations

from typing import Any

import pytest

from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2
from petstore_common import callers
from petstore_gateway.auth import key_id

from ..conftest import STATIC_KEY, Client
from ..fakes import FakeBackend
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
WIRES = pytest.mark.parametrize("wire", list(Wire))


@WIRES
async def test_inventory_counts_pets_by_status(client: Client, backend: FakeBackend, wire: Wire) -> None:
    backend.pet.add(1, "a", pet_pb2.PET_STATUS_AVAILABLE)
    backend.pet.add(2, "b", pet_pb2.PET_STATUS_AVAILABLE)
    backend.pet.add(3, "c", pet_pb2.PET_STATUS_SOLD)
    response = await client.get("/v2/store/inventory", headers={"Accept": wire.value})
    assert response.status == 200
    body = await wire.read(response)
    assert body == {"available": 2, "sold": 1}


async def test_inventory_xml_shape(client: Client, backend: FakeBackend) -> None:
    backend.pet.add(1, "a", pet_pb2.PET_STATUS_PENDING)
    response = await client.get("/v2/store/inventory", headers={"Accept": "application/xml"})
    assert "<inventory><pending>1</pending></inventory>" in await response.text()


@WIRES
async def test_place_order(client: Client, backend: FakeBackend, wire: Wire) -> None:
    backend.pet.add(9, "Rex")
    order = {
        "petId": 9,
        "quantity": 2,
        "shipDate": "2024-05-01T14:00:00+02:00",
        "status": "approved",
        "complete": True,
    }
    response = await client.post(
        "/v2/store/order", data=wire.body("Order", order), headers=wire.headers(**KEY)
    )
    assert response.status == 200
    body = await wire.read(response)
    assert body == {**order, "id": body["id"], "shipDate": "2024-05-01T12:00:00.000Z"}
    assert backend.order.orders[body["id"]].status == order_pb2.ORDER_STATUS_APPROVED


@WIRES
async def test_place_order_defaults(client: Client, backend: FakeBackend, wire: Wire) -> None:
    backend.pet.add(9, "Rex")
    response = await client.post(
        "/v2/store/order", data=wire.body("Order", {"petId": 9}), headers=wire.headers(**KEY)
    )
    body = await wire.read(response)
    assert (body["quantity"], body["status"], body["complete"]) == (1, "placed", False)
    assert "shipDate" not in body


@WIRES
@pytest.mark.parametrize(
    ("order", "message"),
    [
        ({"quantity": 1}, "petId is required"),
        ({"petId": 9, "quantity": 0}, "quantity must be at least 1"),
        ({"petId": 9, "quantity": 2_000_000}, "quantity must be at most 1000000"),
        ({"petId": 9, "status": "lost"}, "status must be one of placed, approved, delivered"),
        ({"petId": 9, "shipDate": "2024-05-01T12:00:00"}, None),
        ({"petId": 9, "complete": "maybe"}, "complete must be true or false"),
        ({"petId": "x"}, "petId must be an integer"),
    ],
)
async def test_place_order_invalid_is_400(
    client: Client, backend: FakeBackend, wire: Wire, order: dict[str, Any], message: str | None
) -> None:
    backend.pet.add(9, "Rex")
    response = await client.post(
        "/v2/store/order", data=wire.body("Order", order), headers=wire.headers(**KEY)
    )
    status, shown = await error_of(wire, response)
    assert status == 400
    assert shown == (message or shown)
    assert backend.order.orders == {}


@WIRES
async def test_place_order_unparseable_is_400(client: Client, wire: Wire) -> None:
    response = await client.post("/v2/store/order", data=b"<<{", headers=wire.headers(**KEY))
    assert (await error_of(wire, response))[0] == 400


@WIRES
async def test_place_order_for_an_unknown_pet_is_404(client: Client, wire: Wire) -> None:
    response = await client.post(
        "/v2/store/order", data=wire.body("Order", {"petId": 5}), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, response) == (404, "pet 5 not found")


@WIRES
async def test_place_order_when_the_pet_service_is_down_is_503(
    client: Client, backend: FakeBackend, wire: Wire
) -> None:
    backend.order.pet_service_down = True
    response = await client.post(
        "/v2/store/order", data=wire.body("Order", {"petId": 5}), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, response) == (503, "the order service is unavailable")
    text = await response.text()
    assert "10.1.2.3" not in text
    assert "Traceback" not in text


@WIRES
async def test_get_order(client: Client, backend: FakeBackend, wire: Wire) -> None:
    backend.order.orders[4] = order_pb2.Order(
        id=4, pet_id=9, quantity=1, status=order_pb2.ORDER_STATUS_DELIVERED
    )
    response = await client.get("/v2/store/order/4", headers={**KEY, "Accept": wire.value})
    assert response.status == 200
    assert await wire.read(response) == {
        "id": 4,
        "petId": 9,
        "quantity": 1,
        "status": "delivered",
        "complete": False,
    }


@WIRES
@pytest.mark.parametrize(("order_id", "status"), [("4", 404), ("four", 400), ("1.5", 400), (str(2**64), 400)])
async def test_get_order_errors(client: Client, wire: Wire, order_id: str, status: int) -> None:
    response = await client.get(f"/v2/store/order/{order_id}", headers={**KEY, "Accept": wire.value})
    assert (await error_of(wire, response))[0] == status


@WIRES
async def test_delete_order(client: Client, backend: FakeBackend, wire: Wire) -> None:
    backend.order.orders[4] = order_pb2.Order(id=4, pet_id=9, quantity=1)
    response = await client.delete("/v2/store/order/4", headers={**KEY, "Accept": wire.value})
    assert response.status == 200
    assert await wire.read(response) == {"code": 200, "type": "unknown", "message": "4"}
    assert backend.order.orders == {}


@WIRES
@pytest.mark.parametrize(("order_id", "status"), [("4", 404), ("-4", 400)])
async def test_delete_order_errors(client: Client, wire: Wire, order_id: str, status: int) -> None:
    response = await client.delete(f"/v2/store/order/{order_id}", headers={**KEY, "Accept": wire.value})
    assert (await error_of(wire, response))[0] == status


async def test_every_order_call_names_its_caller(client: Client, backend: FakeBackend) -> None:
    backend.pet.add(9, "Rex")
    token = backend.user.open_session(7, "ann")
    as_ann = {"api_key": token}

    placed = await client.post("/v2/store/order", json={"petId": 9, "quantity": 1}, headers=as_ann)
    order_id = (await placed.json())["id"]
    read = await client.get(f"/v2/store/order/{order_id}", headers=KEY)
    deleted = await client.delete(f"/v2/store/order/{order_id}", headers=as_ann)

    assert (placed.status, read.status, deleted.status) == (200, 200, 200)
    staff = callers.Caller(kind=callers.staff().kind, staff_key_id=key_id(STATIC_KEY.encode()))
    assert backend.order.callers == [callers.customer(7), staff, callers.customer(7)]


@WIRES
async def test_reading_an_order_anonymously_is_401(client: Client, backend: FakeBackend, wire: Wire) -> None:
    backend.order.orders[4] = order_pb2.Order(id=4, pet_id=9, quantity=1)
    response = await client.get("/v2/store/order/4", headers={"Accept": wire.value})
    assert await error_of(wire, response) == (
        401,
        "api_key header (or Authorization: Bearer) is required for this operation",
    )
    assert backend.order.callers == []


@WIRES
async def test_staff_move_an_order_on_with_a_status_only_body(
    client: Client, backend: FakeBackend, wire: Wire
) -> None:
    backend.order.orders[4] = order_pb2.Order(
        id=4, pet_id=9, quantity=1, status=order_pb2.ORDER_STATUS_PLACED
    )

    response = await client.put(
        "/v2/store/order/4", data=wire.body("Order", {"status": "approved"}), headers=wire.headers(**KEY)
    )

    assert response.status == 200
    assert (await wire.read(response))["status"] == "approved"
    assert backend.order.orders[4].status == order_pb2.ORDER_STATUS_APPROVED


@WIRES
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "status is required: one of placed, approved, delivered"),
        ({"status": "shipped"}, "status must be one of placed, approved, delivered"),
        ({"id": 5, "status": "approved"}, "the body's id 5 is not the orderId 4 of the path"),
    ],
)
async def test_a_status_body_must_name_a_status_of_this_order(
    client: Client, backend: FakeBackend, wire: Wire, body: dict[str, Any], message: str
) -> None:
    backend.order.orders[4] = order_pb2.Order(
        id=4, pet_id=9, quantity=1, status=order_pb2.ORDER_STATUS_PLACED
    )
    response = await client.put(
        "/v2/store/order/4", data=wire.body("Order", body), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, response) == (400, message)
    assert backend.order.orders[4].status == order_pb2.ORDER_STATUS_PLACED
