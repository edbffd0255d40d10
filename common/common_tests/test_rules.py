"""The contract's field rules and enum names, read from the protos' descriptors."""

from __future__ import annotations

import pytest

from petstore.auth.v1 import caller_pb2
from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore.user.v1 import user_service_pb2
from petstore_common.rules import enum_names, field_rules


def test_a_fields_rules_are_its_annotation() -> None:
    name = field_rules(pet_pb2.Pet, "name")
    assert name.HasField("string")
    assert name.string.max_len == 256
    assert field_rules(pet_pb2.Pet.DESCRIPTOR, "name") == name  # by descriptor as well
    urls = field_rules(pet_pb2.Pet, "photo_urls").repeated
    assert (urls.max_items, urls.items.string.max_len) == (64, 2048)


def test_a_field_without_rules_has_empty_ones_and_an_unknown_field_is_an_error() -> None:
    assert field_rules(pet_pb2.Pet, "version") == type(field_rules(pet_pb2.Pet, "version"))()
    with pytest.raises(KeyError):
        field_rules(pet_pb2.Pet, "nickname")


def test_the_rules_are_a_copy_that_cannot_change_the_contract() -> None:
    rules = field_rules(pet_pb2.Pet, "name")
    rules.string.max_len = 1

    assert field_rules(pet_pb2.Pet, "name").string.max_len == 256


def test_the_bounds_services_share_are_the_protos() -> None:
    ids = field_rules(pet_service_pb2.FindExistingPetsRequest, "ids").repeated
    users = field_rules(user_service_pb2.CreateUsersRequest, "users").repeated
    assert (ids.max_items, users.max_items) == (1000, 100)


def test_enum_names_are_the_values_without_prefix_in_lower_case_unspecified_left_out() -> None:
    assert dict(enum_names(pet_pb2.PetStatus)) == {
        pet_pb2.PET_STATUS_AVAILABLE: "available",
        pet_pb2.PET_STATUS_PENDING: "pending",
        pet_pb2.PET_STATUS_SOLD: "sold",
    }
    assert list(enum_names(order_pb2.OrderStatus).values()) == ["placed", "approved", "delivered"]
    assert list(enum_names(caller_pb2.CallerKind.DESCRIPTOR).values()) == ["anonymous", "customer", "staff"]
