from __future__ import annotations

from typing import Any

import pytest

from petstore.pet.v1 import pet_pb2
from petstore_gateway.representations.pet import pet_from_wire, pet_to_wire
from petstore_gateway.representations.shapes import InvalidRepresentation

FULL = {
    "id": 9,
    "category": {"id": 1, "name": "Dogs"},
    "name": "Rex",
    "photoUrls": ["http://x/1.png"],
    "tags": [{"id": 3, "name": "friendly"}, {"name": "big"}],
    "status": "pending",
}


def test_every_field_round_trips() -> None:
    pet = pet_from_wire(FULL, require_id=False)
    assert pet.id == 9
    assert (pet.category.id, pet.category.name) == (1, "Dogs")
    assert pet.status == pet_pb2.PET_STATUS_PENDING
    assert pet_to_wire(pet) == FULL


def test_absent_optional_fields_stay_absent() -> None:
    pet = pet_from_wire({"name": "Rex", "photoUrls": [], "category": None, "status": None}, require_id=False)
    assert not pet.HasField("id")
    assert not pet.HasField("category")
    assert pet_to_wire(pet) == {"name": "Rex", "photoUrls": [], "tags": []}


def test_unknown_fields_are_ignored() -> None:
    assert pet_from_wire({"name": "a", "photoUrls": [], "color": "red"}, require_id=False).name == "a"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": None}, "name is required"),
        ({"photoUrls": None}, "photoUrls is required"),
        ({"id": None}, "id is required"),
        ({"id": "7"}, "id must be an integer"),
        ({"id": True}, "id must be an integer"),
        ({"id": 1.5}, "id must be an integer"),
        ({"id": 2**63}, "id must be a 64-bit integer"),
        ({"name": 5}, "name must be a string"),
        ({"photoUrls": "x"}, "photoUrls must be a list of strings"),
        ({"photoUrls": [1]}, "photoUrls must be a list of strings"),
        ({"tags": [1]}, "tags must be a list of objects"),
        ({"tags": [{"id": "x"}]}, r"tags\[0\]\.id must be an integer"),
        ({"category": []}, "category must be an object"),
        ({"category": {"name": 1}}, r"category\.name must be a string"),
        ({"status": "lost"}, "status must be one of available, pending, sold"),
    ],
)
def test_shape_errors_are_precise(change: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRepresentation, match=f"^{message}$"):
        pet_from_wire({**FULL, **change}, require_id=True)


def test_the_body_must_be_an_object() -> None:
    with pytest.raises(InvalidRepresentation, match="the pet must be an object"):
        pet_from_wire([FULL], require_id=False)
