"""Requests against their field rules, and the messages that name what is wrong in the client's
terms."""

from __future__ import annotations

import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore.user.v1 import user_pb2, user_service_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.field_violations import FieldViolation, client_name, worded
from petstore_common.request_validation import RequestValidator

TAG_NAMES = "petstore.pet.v1.ListPetsRequest.tag_names"
VALIDATOR = RequestValidator(field_names={TAG_NAMES: "tags"})


def refusal(request: object, validator: RequestValidator = VALIDATOR) -> str | None:
    try:
        validator.check(request)
    except InvalidArgument as exc:
        return exc.message
    return None


@pytest.mark.parametrize(
    "request_",
    [
        pet_service_pb2.GetPetRequest(id=1),
        pet_service_pb2.CreatePetRequest(pet=pet_pb2.Pet(name="Rex", photo_urls=["https://x/1.png"])),
        pet_service_pb2.UpdatePetRequest(pet=pet_pb2.Pet(id=1), update_mask=FieldMask(paths=["status"])),
        order_service_pb2.CreateOrderRequest(order=order_pb2.Order(pet_id=1, quantity=1)),
        user_service_pb2.UpdateUserRequest(username="ann", user=user_pb2.User(username="ann")),
        pet_service_pb2.GetInventoryRequest(),  # no rules at all
        b"raw bytes",  # a handler without a deserializer: nothing to check
    ],
)
def test_valid_requests_pass(request_: object) -> None:
    assert refusal(request_) is None


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        # JSON names; the resource a request carries is the body, so its own name is left out.
        (
            pet_service_pb2.CreatePetRequest(pet=pet_pb2.Pet(name="n" * 257)),
            "name: must be at most 256 characters",
        ),
        (
            pet_service_pb2.CreatePetRequest(pet=pet_pb2.Pet(photo_urls=["ok", "u" * 2049])),
            "photoUrls[1]: must be at most 2048 characters",
        ),
        (
            pet_service_pb2.UpdatePetRequest(pet=pet_pb2.Pet(tags=[pet_pb2.Tag(), pet_pb2.Tag(id=0)])),
            "tags[1].id: must be positive",
        ),
        (
            pet_service_pb2.CreatePetRequest(pet=pet_pb2.Pet(category=pet_pb2.Category(name="a\nb"))),
            "category.name: must not contain control characters",  # a pattern in words
        ),
        (
            order_service_pb2.CreateOrderRequest(order=order_pb2.Order(pet_id=1, quantity=1_000_001)),
            "quantity: must be greater than or equal to 1 and less than or equal to 1000000",
        ),  # the engine's words
        # A service's own name for a field.
        (pet_service_pb2.ListPetsRequest(tag_names=["a", ""]), "tags[1]: must not be empty"),
        (pet_service_pb2.ListPetsRequest(tag_names=["t"] * 65), "tags: must have at most 64 entries"),
        # Enums are named as clients write them.
        (
            pet_service_pb2.ListPetsRequest(statuses=[pet_pb2.PET_STATUS_UNSPECIFIED]),
            "statuses[0]: must be one of available, pending, sold",
        ),
        (
            order_service_pb2.UpdateOrderStatusRequest(id=1),
            "status: must be one of placed, approved, delivered",
        ),
        # Nested requests: the batch's index, then the user's field.
        (
            user_service_pb2.CreateUsersRequest(
                users=[
                    user_service_pb2.CreateUserRequest(user=user_pb2.User(username="ann"), password="p" * 8),
                    user_service_pb2.CreateUserRequest(user=user_pb2.User(username="b b"), password="p" * 8),
                ]
            ),
            "users[1].username: may contain only letters, digits and . _ - @",
        ),
        (user_service_pb2.CreateUserRequest(user=user_pb2.User(username="ann")), "password is required"),
    ],
)
def test_a_violation_names_the_field_as_the_client_wrote_it(request_: object, message: str) -> None:
    assert refusal(request_) == message


def test_the_first_violation_is_named() -> None:
    pet = pet_pb2.Pet(id=0, name="n" * 257)
    assert refusal(pet_service_pb2.CreatePetRequest(pet=pet)) == "id: must be positive"


def test_a_message_that_is_not_a_request_keeps_every_field_name() -> None:
    assert refusal(pet_pb2.Pet(category=pet_pb2.Category(id=-1))) == "category.id: must be positive"


def test_without_names_a_field_is_its_json_name_and_a_pattern_its_formats_words() -> None:
    plain = RequestValidator()
    assert refusal(pet_service_pb2.ListPetsRequest(tag_names=["a\x00"]), plain) == (
        "tagNames[0]: must not contain control characters"
    )
    assert refusal(user_service_pb2.GetUserRequest(username="a b"), plain) == (
        "username: may contain only letters, digits and . _ - @"
    )


def test_refusal_says_what_check_raises_or_none() -> None:
    validator = RequestValidator()
    assert validator.refusal(pet_service_pb2.GetPetRequest(id=0)) == "id: must be positive"
    assert validator.refusal(pet_service_pb2.GetPetRequest(id=1)) is None


def violation_of(request: object) -> FieldViolation | None:
    try:
        VALIDATOR.check(request)
    except InvalidArgument as exc:
        return exc.violation
    return None


@pytest.mark.parametrize(
    ("request_", "field", "description"),
    [
        (
            pet_service_pb2.CreatePetRequest(pet=pet_pb2.Pet(photo_urls=["ok", "u" * 2049])),
            "pet.photo_urls[1]",
            "must be at most 2048 characters",
        ),
        (
            pet_service_pb2.UpdatePetRequest(pet=pet_pb2.Pet(tags=[pet_pb2.Tag(), pet_pb2.Tag(id=0)])),
            "pet.tags[1].id",
            "must be positive",
        ),
        (
            pet_service_pb2.ListPetsRequest(tag_names=["a\x00"]),
            "tag_names[0]",
            "must not contain control characters",
        ),
        (user_service_pb2.CreateUserRequest(user=user_pb2.User(username="ann")), "password", "is required"),
    ],
)
def test_the_violation_is_neutral_the_proto_path_and_the_rule_without_a_field_name(
    request_: object, field: str, description: str
) -> None:
    """No HTTP name (photoUrls, tags) and no resource dropped: naming is the gateway's."""
    violation = violation_of(request_)
    assert violation is not None
    assert (violation.field, violation.description) == (field, description)
    assert violation.reason
    assert " " not in violation.reason  # a rule id, not prose


def test_a_required_field_has_the_reason_required() -> None:
    violation = violation_of(user_service_pb2.CreateUserRequest(user=user_pb2.User(username="ann")))
    assert violation == FieldViolation("password", "required", "is required")


def test_the_legacy_message_is_the_neutral_violation_worded_with_the_services_names() -> None:
    """One wording for both: the message older gateways show is `worded` over the violation."""
    request = pet_service_pb2.ListPetsRequest(tag_names=["a\x00"])
    with pytest.raises(InvalidArgument) as caught:
        VALIDATOR.check(request)
    assert caught.value.violation is not None
    name = client_name(request.DESCRIPTOR, caught.value.violation.field, {TAG_NAMES: "tags"})
    assert (
        caught.value.message
        == worded(name or "", caught.value.violation)
        == ("tags[0]: must not contain control characters")
    )
