"""Both API descriptions publish the protos' field rules (the bounds the services enforce): every
bound below is compared with the rule read from the descriptor, never with a number written here,
and a rule changed in the proto changes both documents."""

from __future__ import annotations

from typing import Any

import pytest
from buf.validate.validate_pb2 import FieldRules

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore.user.v1 import user_pb2, user_service_pb2
from petstore.webhook.v1 import webhook_service_pb2
from petstore_common.formats import published_pattern
from petstore_common.rules import field_rules
from petstore_gateway.apidoc import schemas

from .described import operations

DOCUMENTS = pytest.mark.parametrize("name", ["swagger", "openapi"])


def definition(document: dict[str, Any], name: str) -> dict[str, Any]:
    schemas = document["definitions"] if "swagger" in document else document["components"]["schemas"]
    schema: dict[str, Any] = schemas[name]
    return schema


def parameter(document: dict[str, Any], method: str, route: str, name: str) -> dict[str, Any]:
    """A path or query parameter's schema, as either document writes it."""
    operation = operations(document)[(method, f"/v2{route}")]
    [found] = [p for p in operation["parameters"] if p["name"] == name]
    schema: dict[str, Any] = found if "swagger" in document else found["schema"]
    return schema


def form_field(document: dict[str, Any], method: str, route: str, name: str) -> dict[str, Any]:
    """A form field, as either document writes it (OpenAPI: the same in every form media type)."""
    operation = operations(document)[(method, f"/v2{route}")]
    if "swagger" in document:
        [found] = [p for p in operation["parameters"] if p["name"] == name]
        return dict(found)
    contents = operation["requestBody"]["content"].values()
    schemas = [content["schema"]["properties"][name] for content in contents]
    assert all(schema == schemas[0] for schema in schemas)
    return dict(schemas[0])


def minimum(rules: FieldRules) -> int:
    numbers = rules.int64 if rules.HasField("int64") else rules.int32
    return numbers.gt + 1 if numbers.HasField("gt") else numbers.gte


def rule(message: Any, field: str, path: str) -> object:
    """`path` of the field's rules ("string.max_len"), or "minimum" (the least integer let through),
    or "required_len" (1 for a required field). A string's "pattern" is the one its predefined
    rules stand for (petstore_common.formats): the protos write no pattern of their own."""
    rules = field_rules(message, field)
    if path == "minimum":
        return minimum(rules)
    if path == "required_len":
        return int(rules.required)
    value: Any = rules
    for part in path.split("."):
        value = published_pattern(value) if part == "pattern" else getattr(value, part)
    return value


def published(document: dict[str, Any], where: tuple[str, ...]) -> object:
    """("definition", shape, property..., key), or ("parameter" | "form", method, route, name, key...)."""
    kind, *rest = where
    if kind == "definition":
        shape, *keys = rest
        value: Any = definition(document, shape)["properties"]
    else:
        method, route, name, *keys = rest
        value = (parameter if kind == "parameter" else form_field)(document, method, route, name)
    for key in keys:
        value = value[key]
    return value


Pet, Category, Tag, Order, User = pet_pb2.Pet, pet_pb2.Category, pet_pb2.Tag, order_pb2.Order, user_pb2.User
NewPassword = user_service_pb2.CreateUserRequest
NewWebhook = webhook_service_pb2.CreateEndpointRequest
BOUNDS: list[tuple[tuple[str, ...], tuple[Any, str, str]]] = [
    (("definition", "Pet", "id", "minimum"), (Pet, "id", "minimum")),
    (("definition", "Pet", "name", "maxLength"), (Pet, "name", "string.max_len")),
    (("definition", "Pet", "name", "pattern"), (Pet, "name", "string.pattern")),  # not blank
    (("definition", "Pet", "photoUrls", "maxItems"), (Pet, "photo_urls", "repeated.max_items")),
    (
        ("definition", "Pet", "photoUrls", "items", "maxLength"),
        (Pet, "photo_urls", "repeated.items.string.max_len"),
    ),
    (
        ("definition", "Pet", "photoUrls", "items", "pattern"),
        (Pet, "photo_urls", "repeated.items.string.pattern"),
    ),
    (("definition", "Pet", "tags", "maxItems"), (Pet, "tags", "repeated.max_items")),
    (
        ("parameter", "GET", "/pet/findByStatus", "pageToken", "maxLength"),
        (pet_service_pb2.ListPetsRequest, "page_token", "string.max_len"),
    ),
    (
        ("parameter", "GET", "/pet/findByTags", "pageToken", "maxLength"),
        (pet_service_pb2.ListPetsRequest, "page_token", "string.max_len"),
    ),
    (
        ("parameter", "GET", "/store/order", "pageToken", "maxLength"),
        (order_service_pb2.ListOrdersRequest, "page_token", "string.max_len"),
    ),
    (("definition", "Category", "id", "minimum"), (Category, "id", "minimum")),
    (("definition", "Category", "name", "maxLength"), (Category, "name", "string.max_len")),
    (("definition", "Category", "name", "pattern"), (Category, "name", "string.pattern")),
    (("definition", "Tag", "id", "minimum"), (Tag, "id", "minimum")),
    (("definition", "Tag", "name", "maxLength"), (Tag, "name", "string.max_len")),
    (("definition", "Tag", "name", "pattern"), (Tag, "name", "string.pattern")),
    (("definition", "Order", "id", "minimum"), (Order, "id", "minimum")),
    (("definition", "Order", "petId", "minimum"), (Order, "pet_id", "minimum")),
    (("definition", "Order", "quantity", "minimum"), (Order, "quantity", "int32.gte")),
    (("definition", "Order", "quantity", "maximum"), (Order, "quantity", "int32.lte")),
    *(
        bound
        for shape in ("NewUser", "UserUpdate", "User")
        for bound in (
            (("definition", shape, "username", "minLength"), (User, "username", "required_len")),
            (("definition", shape, "username", "maxLength"), (User, "username", "string.max_len")),
            (("definition", shape, "username", "pattern"), (User, "username", "string.pattern")),
            (("definition", shape, "email", "maxLength"), (User, "email", "string.max_len")),
            (("definition", shape, "firstName", "maxLength"), (User, "first_name", "string.max_len")),
            (("definition", shape, "firstName", "pattern"), (User, "first_name", "string.pattern")),
            (("definition", shape, "lastName", "maxLength"), (User, "last_name", "string.max_len")),
            (("definition", shape, "lastName", "pattern"), (User, "last_name", "string.pattern")),
            (("definition", shape, "phone", "maxLength"), (User, "phone", "string.max_len")),
            (("definition", shape, "phone", "pattern"), (User, "phone", "string.pattern")),
        )
    ),
    (("definition", "NewUser", "email", "minLength"), (User, "email", "string.min_len")),
    (("definition", "NewUser", "email", "pattern"), (User, "email", "string.pattern")),
    (("definition", "NewUser", "password", "minLength"), (NewPassword, "password", "string.min_len")),
    (("definition", "NewUser", "password", "maxLength"), (NewPassword, "password", "string.max_len")),
    (
        ("definition", "UserUpdate", "password", "minLength"),
        (user_service_pb2.UpdateUserRequest, "password", "string.min_len"),
    ),
    (
        ("definition", "UserUpdate", "password", "maxLength"),
        (user_service_pb2.UpdateUserRequest, "password", "string.max_len"),
    ),
    (
        ("parameter", "GET", "/pet/{petId}", "petId", "minimum"),
        (pet_service_pb2.GetPetRequest, "id", "minimum"),
    ),
    (
        ("parameter", "GET", "/pet/findByTags", "tags", "maxItems"),
        (pet_service_pb2.ListPetsRequest, "tag_names", "repeated.max_items"),
    ),
    (
        ("parameter", "GET", "/pet/findByTags", "tags", "items", "minLength"),
        (pet_service_pb2.ListPetsRequest, "tag_names", "repeated.items.string.min_len"),
    ),
    (
        ("parameter", "GET", "/pet/findByTags", "tags", "items", "maxLength"),
        (pet_service_pb2.ListPetsRequest, "tag_names", "repeated.items.string.max_len"),
    ),
    (
        ("parameter", "GET", "/pet/findByTags", "tags", "items", "pattern"),
        (pet_service_pb2.ListPetsRequest, "tag_names", "repeated.items.string.pattern"),
    ),
    (
        ("parameter", "GET", "/pet/{petId}/images/{imageId}", "imageId", "pattern"),
        (pet_service_pb2.GetPetImageRequest, "image_id", "string.pattern"),
    ),
    (
        ("form", "POST", "/pet/{petId}/uploadImage", "additionalMetadata", "maxLength"),
        (pet_service_pb2.UploadPetImageRequest, "additional_metadata", "string.max_len"),
    ),
    (
        ("form", "POST", "/pet/{petId}/uploadImage", "additionalMetadata", "pattern"),
        (pet_service_pb2.UploadPetImageRequest, "additional_metadata", "string.pattern"),
    ),
    (("form", "POST", "/pet/{petId}", "name", "maxLength"), (Pet, "name", "string.max_len")),
    (("form", "POST", "/pet/{petId}", "name", "pattern"), (Pet, "name", "string.pattern")),
    (
        ("parameter", "GET", "/store/order/{orderId}", "orderId", "minimum"),
        (order_service_pb2.GetOrderRequest, "id", "minimum"),
    ),
    (
        ("parameter", "GET", "/store/order", "petId", "minimum"),
        (order_service_pb2.ListOrdersRequest, "pet_id", "minimum"),
    ),
    (
        ("parameter", "GET", "/user/{username}", "username", "maxLength"),
        (user_service_pb2.GetUserRequest, "username", "string.max_len"),
    ),
    (
        ("parameter", "GET", "/user/{username}", "username", "pattern"),
        (user_service_pb2.GetUserRequest, "username", "string.pattern"),
    ),
    (
        ("parameter", "GET", "/user/login", "username", "maxLength"),
        (user_service_pb2.LoginRequest, "username", "string.max_len"),
    ),
    (
        ("parameter", "GET", "/user/login", "password", "minLength"),
        (user_service_pb2.LoginRequest, "password", "required_len"),
    ),
    (
        ("parameter", "GET", "/user/login", "password", "maxLength"),
        (NewPassword, "password", "string.max_len"),
    ),
    (("definition", "NewWebhook", "url", "minLength"), (NewWebhook, "url", "string.min_len")),
    (("definition", "NewWebhook", "url", "maxLength"), (NewWebhook, "url", "string.max_len")),
    (
        ("definition", "NewWebhook", "eventTypes", "minItems"),
        (NewWebhook, "event_types", "repeated.min_items"),
    ),
    (
        ("definition", "NewWebhook", "eventTypes", "maxItems"),
        (NewWebhook, "event_types", "repeated.max_items"),
    ),
    (
        ("definition", "NewWebhook", "eventTypes", "items", "maxLength"),
        (NewWebhook, "event_types", "repeated.items.string.max_len"),
    ),
    (
        ("parameter", "DELETE", "/webhooks/{webhookId}", "webhookId", "minimum"),
        (webhook_service_pb2.DeleteEndpointRequest, "id", "minimum"),
    ),
    (
        ("parameter", "GET", "/webhooks/{webhookId}/deliveries", "webhookId", "minimum"),
        (webhook_service_pb2.ListDeliveriesRequest, "endpoint_id", "minimum"),
    ),
]


@DOCUMENTS
@pytest.mark.parametrize(("where", "source"), BOUNDS, ids=[" ".join(where[1:]) for where, _ in BOUNDS])
def test_every_published_bound_is_the_protos_rule(
    documents: dict[str, dict[str, Any]], name: str, where: tuple[str, ...], source: tuple[Any, str, str]
) -> None:
    assert published(documents[name], where) == rule(*source)


def test_the_optional_email_of_an_update_is_empty_or_the_protos_email() -> None:
    assert f"^$|{rule(User, 'email', 'string.pattern')}" == schemas.OPTIONAL_EMAIL_PATTERN


def test_a_batch_of_users_is_bounded_as_the_proto_bounds_it(documents: dict[str, dict[str, Any]]) -> None:
    limit = rule(user_service_pb2.CreateUsersRequest, "users", "repeated.max_items")
    swagger_body = operations(documents["swagger"])[("POST", "/v2/user/createWithList")]["parameters"][0]
    assert swagger_body["schema"]["maxItems"] == limit
    openapi_body = operations(documents["openapi"])[("POST", "/v2/user/createWithList")]["requestBody"]
    assert {content["schema"]["maxItems"] for content in openapi_body["content"].values()} == {limit}
