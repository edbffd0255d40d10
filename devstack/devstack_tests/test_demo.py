"""The demo data set: the classic pets and categories, in shapes the gateway accepts (the
end-to-end suite loads it into a real stack: tests/e2e/test_demo.py)."""

from __future__ import annotations

from petstore_devstack.demo import CATEGORIES, ORDER_LIFECYCLE, ORDERS, PETS, USERS, pet_body, user_body


def test_ten_pets_in_four_categories() -> None:
    assert len(PETS) == 10
    assert (
        {pet_body(i)["category"]["name"] for i in range(len(PETS))}
        == set(CATEGORIES.values())
        == {
            "Dogs",
            "Cats",
            "Rabbits",
            "Lions",
        }
    )


def test_pet_bodies_carry_every_field_of_a_pet() -> None:
    body = pet_body(3)
    assert body["name"] == "Dog 1"
    assert body["category"] == {"id": 1, "name": "Dogs"}
    assert body["tags"] == [{"id": 1, "name": "tag1"}, {"id": 2, "name": "tag2"}]
    assert body["status"] == "available"
    assert body["photoUrls"] == ["https://example.com/photos/dog-1.jpg"]


def test_users_have_what_post_user_requires() -> None:
    for username in USERS:
        body = user_body(username)
        assert body["username"] == username
        assert body["email"] == f"{username}@example.com"
        assert body["password"]


def test_orders_refer_to_demo_pets_and_customers_and_reachable_statuses() -> None:
    for username, pet_index, quantity, status in ORDERS:
        assert username in USERS
        assert 0 <= pet_index < len(PETS)
        assert quantity >= 1
        assert status in ORDER_LIFECYCLE


def test_every_demo_customer_owns_orders_and_the_story_has_a_delivery() -> None:
    assert {username for username, *_ in ORDERS} == set(USERS)
    assert {status for *_, status in ORDERS} == set(ORDER_LIFECYCLE)
