"""The demo data of `make run-demo` loads through the real API and reads back as the classic
Petstore's pets, users and orders (each ordered pet reserved by its order)."""

from __future__ import annotations

from petstore_devstack.demo import CATEGORIES, ORDERS, PETS, USERS, load_demo_data, login
from tests.e2e.client import Api
from tests.e2e.conftest import runs_before

HELD = {"placed": "pending", "approved": "pending", "delivered": "sold"}
"""The status an order leaves its pet at: it reserves the pet, and its delivery sells it."""


def orders_reserve_pets() -> bool:
    """Whether an order reserves its pet in this run: from pet-service and order-service 1.1.0
    on; before (one of them at its previous release, `make e2e-skew`) every order stands alone."""
    return not (runs_before("pet-service", "1.1.0") or runs_before("order-service", "1.1.0"))


async def test_demo_data_loads_and_reads_back(api: Api) -> None:
    demo = load_demo_data(api.base_url, api.static_key)

    assert len(demo.pet_ids) == len(PETS) == 10
    assert len(set(demo.pet_ids)) == 10
    assert {category for _, category, _, _ in PETS} == set(CATEGORIES)
    # Staff create every pet with its PETS status; the demo orders only available ones, one pet each.
    assert len({pet_index for _, pet_index, _, _ in ORDERS}) == len(ORDERS)
    assert {PETS[pet_index][3] for _, pet_index, _, _ in ORDERS} == {"available"}
    ordered = {pet_index: status for _, pet_index, _, status in ORDERS}
    for index, (pet_id, (name, category_id, _, status)) in enumerate(zip(demo.pet_ids, PETS, strict=True)):
        if index in ordered and orders_reserve_pets():
            status = HELD[ordered[index]]
        pet = (await api.call("GET", f"/pet/{pet_id}")).json
        expected = (name, CATEGORIES[category_id], status)
        assert (pet["name"], pet["category"]["name"], pet["status"]) == expected
    assert len(demo.order_ids) == len(ORDERS)
    for order_id, (_, pet_index, quantity, status) in zip(demo.order_ids, ORDERS, strict=True):
        order = (await api.call("GET", f"/store/order/{order_id}", api_key=api.static_key)).json
        assert (order["petId"], order["quantity"], order["status"]) == (
            demo.pet_ids[pet_index],
            quantity,
            status,
        )
        assert order["complete"] is (status == "delivered")  # delivered orders are complete
    # Each demo customer logs in with the printed password and sees its own orders only.
    assert set(demo.orders_by_user) == set(USERS)
    for username, own in demo.orders_by_user.items():
        token = login(api.base_url, username)
        for order_id in demo.order_ids:
            seen = await api.call("GET", f"/store/order/{order_id}", api_key=token)
            assert seen.status == (200 if order_id in own else 404), (username, order_id)
    for username in USERS:
        user = await api.call("GET", f"/user/{username}")
        assert user.status == 200
        assert "password" not in user.json
