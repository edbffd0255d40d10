"""The demo data of `make run-demo` loads through the real API and reads back as the classic
Petstore's pets, users and orders."""

from __future__ import annotations

from petstore_devstack.demo import CATEGORIES, ORDERS, PETS, USERS, load_demo_data, login
from tests.e2e.client import Api


async def test_demo_data_loads_and_reads_back(api: Api) -> None:
    demo = load_demo_data(api.base_url, api.static_key)

    assert len(demo.pet_ids) == len(PETS) == 10
    assert len(set(demo.pet_ids)) == 10
    assert {category for _, category, _, _ in PETS} == set(CATEGORIES)
    for pet_id, (name, category_id, _, status) in zip(demo.pet_ids, PETS, strict=True):
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
