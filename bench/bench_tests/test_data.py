"""The bench's data: the baseline's pet is what the gateway answers for the same pet."""

from __future__ import annotations

import pytest

from petstore_bench import data
from petstore_gateway.representations.pet import pet_from_wire, pet_to_wire


@pytest.mark.parametrize("index", [0, 1, 7, 99])
def test_the_gateway_answers_what_the_baseline_answers(index: int) -> None:
    # What the gateway stores from the bench's POST, given an id, comes back unchanged.
    pet = pet_from_wire(data.pet_body(index), require_id=False)
    pet.id = 42
    answered = pet_to_wire(pet)
    assert answered == data.stored_pet(42, index)
    assert list(answered) == list(data.stored_pet(42, index))  # same key order, same bytes


def test_users_have_url_safe_credentials() -> None:
    # The login script puts them into the query string as they are.
    for value in (data.username(3), data.USER_PASSWORD):
        assert value.replace("-", "").isalnum()
    assert data.user_body(3)["username"] == "benchuser3"
