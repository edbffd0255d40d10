from __future__ import annotations

from typing import Any

import pytest

from petstore.user.v1 import user_pb2
from petstore_gateway.representations.shapes import InvalidRepresentation
from petstore_gateway.representations.user import (
    MAX_USERS_PER_REQUEST,
    user_from_wire,
    user_to_wire,
    users_from_wire,
)

FULL = {
    "id": 3,
    "username": "ann",
    "firstName": "Ann",
    "lastName": "Lee",
    "email": "ann@example.com",
    "password": "pw",
    "phone": "123",
    "userStatus": 1,
}


def test_every_field_is_read_and_the_password_never_written() -> None:
    user, password = user_from_wire(FULL, for_create=True)
    assert password == "pw"
    wire = user_to_wire(user)
    assert "password" not in wire
    assert wire == {key: value for key, value in FULL.items() if key != "password"}


@pytest.mark.parametrize("sent", [{}, {"firstName": "", "lastName": "", "phone": ""}])
def test_absent_optional_texts_are_omitted_as_for_pets_and_orders(sent: dict[str, Any]) -> None:
    """Never given and given as "" read back alike: the record keeps no difference."""
    user, _ = user_from_wire(
        {"username": "ann", "email": "a@example.com", "password": "pw", **sent}, for_create=True
    )
    assert user_to_wire(user) == {"username": "ann", "email": "a@example.com", "userStatus": 0}


def test_user_proto_has_no_password_field() -> None:
    assert "password" not in user_pb2.User.DESCRIPTOR.fields_by_name


@pytest.mark.parametrize("missing", ["username", "email", "password"])
def test_create_requires(missing: str) -> None:
    with pytest.raises(InvalidRepresentation, match=f"^{missing} is required$"):
        user_from_wire({**FULL, missing: None}, for_create=True)


def test_update_requires_nothing() -> None:
    user, password = user_from_wire({"firstName": "B"}, for_create=False)
    assert (user.first_name, user.username, password) == ("B", "", None)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"userStatus": "1"}, "userStatus must be an integer"), ({"phone": 1}, "phone must be a string")],
)
def test_shape_errors(change: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRepresentation, match=f"^{message}$"):
        user_from_wire({**FULL, **change}, for_create=True)


def test_lists_name_the_item_at_fault() -> None:
    assert [u.username for u, _ in users_from_wire([FULL, {**FULL, "username": "bob"}])] == ["ann", "bob"]
    with pytest.raises(InvalidRepresentation, match=r"^users\[1\]\.email is required$"):
        users_from_wire([FULL, {**FULL, "email": None}])
    with pytest.raises(InvalidRepresentation, match=r"^users\[0\] must be an object$"):
        users_from_wire(["ann"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (FULL, "the request body must be a list"),
        ([], "at least one user"),
        ([FULL] * (MAX_USERS_PER_REQUEST + 1), "at most"),
    ],
)
def test_lists_must_be_non_empty_bounded_lists(value: Any, message: str) -> None:
    with pytest.raises(InvalidRepresentation, match=message):
        users_from_wire(value)
