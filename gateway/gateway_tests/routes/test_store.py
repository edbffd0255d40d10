from __future__ import annotations

import asyncio
from typing import Any

import pytest

from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2

from ..backend import DELIVERED, Backend, until
from ..conftest import STATIC_KEY, Client
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
WIRES = pytest.mark.parametrize("wire", list(Wire))


@WIRES
async def test_inventory_counts_pets_by_status(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(1, "a", pet_pb2.PET_STATUS_AVAILABLE)
    await backend.add_pet(2, "b", pet_pb2.PET_STATUS_AVAILABLE)
    await backend.add_pet(3, "c", pet_pb2.PET_STATUS_SOLD)
    response = await client.get("/v2/store/inventory", headers={"Accept": wire.value})
    assert response.status == 200
    body = await wire.read(response)
    assert body == {"available": 2, "pending": 0, "sold": 1}  # every status, counted or not


async def test_inventory_xml_shape(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "a", pet_pb2.PET_STATUS_PENDING)
    response = await client.get("/v2/store/inventory", headers={"Accept": "application/xml"})
    expected = "<inventory><available>0</available><pending>1</pending><sold>0</sold></inventory>"
    assert expected in await response.text()


@WIRES
async def test_place_order(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(9, "Rex")
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
    assert (await backend.order(body["id"])).status == order_pb2.ORDER_STATUS_APPROVED


@WIRES
async def test_place_order_defaults(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(9, "Rex")
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
        (
            {"petId": 9, "quantity": 2_000_000},
            "quantity: must be greater than or equal to 1 and less than or equal to 1000000",
        ),
        ({"petId": 9, "status": "lost"}, "status must be one of placed, approved, delivered"),
        ({"petId": 9, "shipDate": "2024-05-01T12:00:00"}, None),
        ({"petId": 9, "complete": "maybe"}, "complete must be true or false"),
        ({"petId": "x"}, "petId must be an integer"),
    ],
)
async def test_place_order_invalid_is_400(
    client: Client, backend: Backend, wire: Wire, order: dict[str, Any], message: str | None
) -> None:
    await backend.add_pet(9, "Rex")
    response = await client.post(
        "/v2/store/order", data=wire.body("Order", order), headers=wire.headers(**KEY)
    )
    status, shown = await error_of(wire, response)
    assert status == 400
    assert shown == (message or shown)
    assert await backend.all_orders() == []


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
    client: Client, backend: Backend, wire: Wire
) -> None:
    await backend.add_pet(5, "Rex")
    await backend.stack.pet.stop()
    response = await client.post(
        "/v2/store/order", data=wire.body("Order", {"petId": 5}), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, response) == (503, "the order service is unavailable")
    text = await response.text()
    assert "the pet service is unavailable" not in text  # the order service's own words stay inside
    assert "Traceback" not in text
    assert await backend.all_orders() == []


@WIRES
async def test_get_order(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(9, "Rex")
    await backend.add_order(9, order_id=4, status=DELIVERED)
    response = await client.get("/v2/store/order/4", headers={**KEY, "Accept": wire.value})
    assert response.status == 200
    assert await wire.read(response) == {
        "id": 4,
        "petId": 9,
        "quantity": 1,
        "status": "delivered",
        "complete": True,  # delivering completes an order
    }


@WIRES
@pytest.mark.parametrize(("order_id", "status"), [("4", 404), ("four", 400), ("1.5", 400), (str(2**64), 400)])
async def test_get_order_errors(client: Client, wire: Wire, order_id: str, status: int) -> None:
    response = await client.get(f"/v2/store/order/{order_id}", headers={**KEY, "Accept": wire.value})
    assert (await error_of(wire, response))[0] == status


@WIRES
async def test_delete_order(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(9, "Rex")
    await backend.add_order(9, order_id=4)
    response = await client.delete("/v2/store/order/4", headers={**KEY, "Accept": wire.value})
    assert response.status == 200
    assert await wire.read(response) == {"code": 200, "type": "unknown", "message": "4"}
    assert await backend.all_orders() == []


@WIRES
@pytest.mark.parametrize(("order_id", "status"), [("4", 404), ("-4", 400)])
async def test_delete_order_errors(client: Client, wire: Wire, order_id: str, status: int) -> None:
    response = await client.delete(f"/v2/store/order/{order_id}", headers={**KEY, "Accept": wire.value})
    assert (await error_of(wire, response))[0] == status


async def test_every_order_call_names_its_caller(client: Client, backend: Backend) -> None:
    """The order service decides by the caller: a customer's order is its own, and only its
    owner (or staff) sees or cancels it."""
    await backend.add_pet(9, "Rex")
    as_ann = {"api_key": await backend.customer("ann", 7)}
    as_bob = {"api_key": await backend.customer("bob", 8)}

    placed = await client.post("/v2/store/order", json={"petId": 9, "quantity": 1}, headers=as_ann)
    order_id = (await placed.json())["id"]
    read = await client.get(f"/v2/store/order/{order_id}", headers=KEY)
    by_owner = await client.get(f"/v2/store/order/{order_id}", headers=as_ann)
    by_other = await client.get(f"/v2/store/order/{order_id}", headers=as_bob)
    cancelled_by_other = await client.delete(f"/v2/store/order/{order_id}", headers=as_bob)
    assert (await backend.order(order_id)).owner_user_id == 7
    deleted = await client.delete(f"/v2/store/order/{order_id}", headers=as_ann)

    assert (placed.status, read.status, by_owner.status, deleted.status) == (200, 200, 200, 200)
    assert await error_of(Wire.JSON, by_other) == (404, f"order {order_id} not found")
    assert cancelled_by_other.status == 404
    assert await backend.all_orders() == []


async def test_each_static_key_is_a_caller_of_its_own(client: Client, backend: Backend) -> None:
    """The key's id goes with the staff caller: an Idempotency-Key is one staff key's own."""
    await backend.add_pet(9, "Rex")
    await backend.add_pet(10, "Max")
    order = {"petId": 9, "quantity": 1}
    first = await client.post("/v2/store/order", json=order, headers={**KEY, "Idempotency-Key": "k-1"})
    again = await client.post("/v2/store/order", json=order, headers={**KEY, "Idempotency-Key": "k-1"})
    other_key = {"api_key": "another-key", "Idempotency-Key": "k-1"}
    # Another pet: pet 9 is held by the first order.
    by_other_key = await client.post("/v2/store/order", json={**order, "petId": 10}, headers=other_key)

    assert (first.status, again.status, by_other_key.status) == (200, 200, 200)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in by_other_key.headers
    assert (await by_other_key.json())["id"] != (await first.json())["id"]


async def test_a_twin_of_a_create_still_running_is_409_until_the_first_answers(
    client: Client, backend: Backend
) -> None:
    await backend.add_pet(9, "Rex")
    pet_question = backend.calls.hold("PetService/ReservePet")
    headers = {**KEY, "Idempotency-Key": "k-1"}
    first = asyncio.create_task(client.post("/v2/store/order", json={"petId": 9}, headers=headers))
    await until(lambda: backend.calls.count("PetService/ReservePet") == 1)  # the key is held

    twin = await client.post("/v2/store/order", json={"petId": 9}, headers=headers)
    pet_question.set()

    assert await error_of(Wire.JSON, twin) == (
        409,
        "a request with this Idempotency-Key is still being processed; retry later",
    )
    assert twin.headers["Retry-After"]
    assert (await first).status == 200
    assert len(await backend.all_orders()) == 1


@WIRES
async def test_reading_an_order_anonymously_is_401(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_pet(9, "Rex")
    await backend.add_order(9, order_id=4)
    backend.calls.clear()
    response = await client.get("/v2/store/order/4", headers={"Accept": wire.value})
    assert await error_of(wire, response) == (
        401,
        "api_key header (or Authorization: Bearer) is required for this operation",
    )
    assert backend.calls.to("OrderService") == []


@WIRES
async def test_staff_move_an_order_on_with_a_status_only_body(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await backend.add_pet(9, "Rex")
    await backend.add_order(9, order_id=4)

    response = await client.put(
        "/v2/store/order/4", data=wire.body("Order", {"status": "approved"}), headers=wire.headers(**KEY)
    )

    assert response.status == 200
    assert (await wire.read(response))["status"] == "approved"
    assert (await backend.order(4)).status == order_pb2.ORDER_STATUS_APPROVED


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
    client: Client, backend: Backend, wire: Wire, body: dict[str, Any], message: str
) -> None:
    await backend.add_pet(9, "Rex")
    await backend.add_order(9, order_id=4)
    response = await client.put(
        "/v2/store/order/4", data=wire.body("Order", body), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, response) == (400, message)
    assert (await backend.order(4)).status == order_pb2.ORDER_STATUS_PLACED
