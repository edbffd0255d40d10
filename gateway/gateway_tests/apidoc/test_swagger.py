from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from aiohttp import web
from aiohttp.web import RequestHandler
from openapi_spec_validator import validate

from petstore.order.v1 import order_pb2
from petstore.pet.v1 import pet_pb2
from petstore_common.rules import field_rules
from petstore_gateway.apidoc.routes import entry_routes
from petstore_gateway.apidoc.routes import routes as document_routes
from petstore_gateway.apidoc.schemas import (
    EMAIL_PATTERN,
    NAME_PATTERN,
    OPTIONAL_EMAIL_PATTERN,
    TEXT_PATTERN,
    USERNAME_PATTERN,
)
from petstore_gateway.apidoc.swagger import build_swagger
from petstore_gateway.operations import API_PREFIX
from petstore_gateway.representations.api_response import API_RESPONSE
from petstore_gateway.representations.inventory import INVENTORY
from petstore_gateway.representations.order import ORDER, ORDER_STATUSES
from petstore_gateway.representations.pet import PET, PET_STATUSES, PETS
from petstore_gateway.representations.shapes import Document, ListOf, Obj, Scalar
from petstore_gateway.representations.user import USER, USERS
from petstore_gateway.representations.webhook import EVENT_TYPES, WEBHOOK, WEBHOOK_DELIVERY
from petstore_gateway.routes import OPERATIONS

from ..conftest import Client
from .described import operations, statuses

NOT_DESCRIBED = frozenset(
    {"/livez", "/readyz"}
    | {API_PREFIX + route.path for route in document_routes if isinstance(route, web.RouteDef)}
    | {route.path for route in entry_routes if isinstance(route, web.RouteDef)}
)
DOCUMENTS = pytest.mark.parametrize("name", ["swagger", "openapi"])
OPTIONAL_KEY = {("POST", "/v2/user"), ("GET", "/v2/user/{username}")}
"""Anonymous is fine; a key, when sent, is checked."""
PRIVATE_READS = {
    ("GET", "/v2/store/order/{orderId}"),
    ("GET", "/v2/store/order"),
    ("GET", "/v2/webhooks"),
    ("GET", "/v2/webhooks/{webhookId}/deliveries"),
}


def served_operations(app: web.Application) -> set[tuple[str, str]]:
    """Every (method, route) the app routes, HEAD aside (aiohttp adds it to each GET)."""
    served = set()
    for route in app.router.routes():
        resource = route.resource
        assert resource is not None
        if route.method != "HEAD" and resource.canonical not in NOT_DESCRIBED:
            served.add((route.method, resource.canonical))
    return served


@DOCUMENTS
async def test_every_served_operation_is_described_and_every_described_one_served(
    client: Client, documents: dict[str, dict[str, Any]], name: str
) -> None:
    served = served_operations(client.app)
    # the classic twenty, PUT /store/order/{orderId}, GET /store/order, images and the four of webhooks
    assert len(served) == 27
    assert set(operations(documents[name])) == served


@DOCUMENTS
def test_the_documents_are_valid(documents: dict[str, dict[str, Any]], name: str) -> None:
    validate(documents[name])


def test_the_document_is_built_afresh_each_time_and_stays_valid() -> None:
    first, second = build_swagger(OPERATIONS, max_body_bytes=10), build_swagger(OPERATIONS, max_body_bytes=10)
    assert first == second
    assert first is not second
    validate(first)


async def test_no_fixed_host_so_try_it_out_uses_the_one_the_page_came_from(
    documents: dict[str, dict[str, Any]],
) -> None:
    swagger, openapi = documents["swagger"], documents["openapi"]
    assert "host" not in swagger
    assert "schemes" not in swagger
    assert swagger["basePath"] == "/v2"
    assert openapi["servers"] == [{"url": "/v2"}]


def test_the_http_limit_it_names_is_aiohttps(documents: dict[str, dict[str, Any]]) -> None:
    """Longer request lines or headers get aiohttp's own plain-text 400 (schemathesis found it)."""
    parameters = inspect.signature(RequestHandler.__init__).parameters
    limit = parameters["max_line_size"].default
    assert limit == parameters["max_field_size"].default
    assert f"longer than {limit} bytes" in documents["swagger"]["info"]["description"]


@DOCUMENTS
def test_api_key_or_bearer_security_on_writes_other_than_sign_up_and_on_orders(
    documents: dict[str, dict[str, Any]], name: str
) -> None:
    document = documents[name]
    secured = {key for key, operation in operations(document).items() if "security" in operation}
    writes = {key for key in operations(document) if key[0] != "GET"}
    assert secured == writes | PRIVATE_READS | OPTIONAL_KEY
    for key in secured:
        expected: list[dict[str, list[str]]] = [{"api_key": []}, {"bearer": []}]  # either
        if key in OPTIONAL_KEY:
            expected.append({})
        assert operations(document)[key]["security"] == expected
        assert 401 in statuses(document, *key)


def _without_descriptions(schemes: dict[str, Any]) -> dict[str, Any]:
    return {name: {k: v for k, v in scheme.items() if k != "description"} for name, scheme in schemes.items()}


def test_bearer_is_an_authorization_api_key_in_swagger_2(documents: dict[str, dict[str, Any]]) -> None:
    """Swagger 2.0 has no bearer scheme: the closest honest form, its value prefixed "Bearer "."""
    schemes = documents["swagger"]["securityDefinitions"]
    assert _without_descriptions(schemes) == {
        "api_key": {"type": "apiKey", "name": "api_key", "in": "header"},
        "bearer": {"type": "apiKey", "name": "Authorization", "in": "header"},
    }
    assert "`Bearer <credential>`" in schemes["bearer"]["description"]


def test_bearer_is_http_bearer_in_openapi_3(documents: dict[str, dict[str, Any]]) -> None:
    schemes = documents["openapi"]["components"]["securitySchemes"]
    assert _without_descriptions(schemes) == {
        "api_key": {"type": "apiKey", "name": "api_key", "in": "header"},
        "bearer": {"type": "http", "scheme": "bearer"},
    }


@DOCUMENTS
def test_every_operation_documents_the_400_of_disagreeing_credentials(
    documents: dict[str, dict[str, Any]], name: str
) -> None:
    for (method, route), operation in operations(documents[name]).items():
        assert (
            "api_key and Authorization: Bearer name different credentials"
            in (operation["responses"]["400"]["description"])
        ), (method, route)


@DOCUMENTS
def test_every_error_is_an_api_response_and_every_operation_can_be_refused(
    documents: dict[str, dict[str, Any]], name: str
) -> None:
    for key, operation in operations(documents[name]).items():
        for status, response in operation["responses"].items():
            if status in ("200", "304"):  # a success, and a not-modified without a body
                continue
            schemas = (
                [response["schema"]]
                if name == "swagger"
                else [content["schema"] for content in response["content"].values()]
            )
            assert schemas, key
            assert all(schema["$ref"].endswith("/ApiResponse") for schema in schemas), (key, status)
        refusals = (
            {200, 429, 503} if key == ("GET", "/v2/pet/{petId}/images/{imageId}") else {200, 406, 429, 503}
        )
        assert refusals <= {int(status) for status in operation["responses"]}, key
        assert "Retry-After" in operation["responses"]["429"]["headers"]


def test_bodies_are_json_or_xml_and_forms_are_forms(documents: dict[str, dict[str, Any]]) -> None:
    swagger = operations(documents["swagger"])
    images = ["image/png", "image/jpeg", "image/gif", "image/webp"]
    for key, operation in swagger.items():
        documents_only = key != ("GET", "/v2/pet/{petId}/images/{imageId}")
        assert operation["produces"] == [
            *([] if documents_only else images),
            "application/json",
            "application/xml",
        ]
        kinds = {parameter["in"] for parameter in operation["parameters"]}
        if "body" in kinds:
            assert operation["consumes"] == ["application/json", "application/xml"], key
            assert {413, 415} <= statuses(documents["swagger"], *key)
    assert swagger[("POST", "/v2/pet/{petId}/uploadImage")]["consumes"] == ["multipart/form-data"]
    assert swagger[("POST", "/v2/pet/{petId}")]["consumes"] == [
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ]
    upload = documents["openapi"]["paths"]["/pet/{petId}/uploadImage"]["post"]["requestBody"]
    file_part = upload["content"]["multipart/form-data"]["schema"]["properties"]["file"]
    assert file_part["format"] == "binary"
    image = documents["openapi"]["paths"]["/pet/{petId}/images/{imageId}"]["get"]["responses"]
    assert set(image["200"]["content"]) == set(images)
    assert set(image["404"]["content"]) == {"application/json", "application/xml"}


def test_paging_parameters_and_headers(documents: dict[str, dict[str, Any]]) -> None:
    openapi = operations(documents["openapi"])
    for route in ("/v2/pet/findByStatus", "/v2/pet/findByTags"):
        operation = openapi[("GET", route)]
        parameters = {parameter["name"]: parameter for parameter in operation["parameters"]}
        assert parameters["limit"]["schema"] == {
            "type": "integer",
            "format": "int32",
            "minimum": 1,
            "maximum": 1000,
            "default": 100,
        }
        assert parameters["pageToken"]["schema"]["type"] == "string"
        assert "X-Next-Page-Token" in operation["responses"]["200"]["headers"]
    status = {p["name"]: p for p in openapi[("GET", "/v2/pet/findByStatus")]["parameters"]}["status"]
    assert (status["style"], status["explode"], status["required"]) == ("form", True, True)
    assert status["schema"]["items"]["enum"] == list(PET_STATUSES)
    login = openapi[("GET", "/v2/user/login")]["responses"]["200"]["headers"]
    assert login["X-Rate-Limit"]["schema"]["type"] == "integer"
    assert login["X-Expires-After"]["schema"] == {"type": "string", "format": "date-time"}


# ---------------------------------------------------------------------------------------
# The schemas follow the representations that the codecs use

_TYPES = {Scalar.INT: "integer", Scalar.STR: "string", Scalar.BOOL: "boolean"}
NOT_IN_DEFINITION = {
    "User": {"password"},
    "NewWebhook": {"id", "state", "disabledReason", "createdAt", "secret"},  # the service's to set
}
"""Fields of a representation that a definition leaves out: what the store never shows, or
what a client does not send."""


def _resolve(definitions: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        resolved: dict[str, Any] = definitions[schema["$ref"].rsplit("/", 1)[-1]]
        return resolved
    return schema


def _assert_follows(definitions: dict[str, Any], schema: dict[str, Any], shape: Any, where: str) -> None:
    schema = _resolve(definitions, schema)
    if isinstance(shape, Scalar):
        assert schema["type"] == _TYPES[shape], where
    elif isinstance(shape, ListOf):
        assert schema["type"] == "array", where
        assert schema["xml"]["wrapped"] is True, where
        item = _resolve(definitions, schema["items"])
        assert item["xml"]["name"] == shape.item_tag, where
        _assert_follows(definitions, item, shape.item, f"{where}[]")
    elif isinstance(shape, Obj):
        assert schema["type"] == "object", where
        assert set(schema["properties"]) <= set(shape.fields), where
        for name, property_schema in schema["properties"].items():
            _assert_follows(definitions, property_schema, shape.fields[name], f"{where}.{name}")


@pytest.mark.parametrize(
    ("definition", "document"),
    [
        ("Pet", PET),
        ("Order", ORDER),
        ("NewUser", USER),
        ("UserUpdate", USER),
        ("User", USER),
        ("ApiResponse", API_RESPONSE),
        ("Inventory", INVENTORY),
        ("Webhook", WEBHOOK),
        ("NewWebhook", WEBHOOK),
        ("WebhookDelivery", WEBHOOK_DELIVERY),
    ],
)
def test_definitions_follow_the_representations(
    documents: dict[str, dict[str, Any]], definition: str, document: Document
) -> None:
    definitions = documents["swagger"]["definitions"]
    schema = definitions[definition]
    assert schema["xml"]["name"] == document.root_tag
    if isinstance(document.shape, Obj):
        expected = set(document.shape.fields) - NOT_IN_DEFINITION.get(definition, set())
        assert set(schema["properties"]) == expected
    _assert_follows(definitions, schema, document.shape, definition)


def test_lists_are_wrapped_as_the_codecs_write_them(documents: dict[str, dict[str, Any]]) -> None:
    swagger = operations(documents["swagger"])
    pets = swagger[("GET", "/v2/pet/findByStatus")]["responses"]["200"]["schema"]
    assert pets["xml"] == {"name": PETS.root_tag, "wrapped": True}
    assert isinstance(PETS.shape, ListOf)
    assert documents["swagger"]["definitions"]["Pet"]["xml"]["name"] == PETS.shape.item_tag
    for route in ("/v2/user/createWithArray", "/v2/user/createWithList"):
        body, idempotency_key = swagger[("POST", route)]["parameters"]
        assert idempotency_key["name"] == "Idempotency-Key"
        assert body["schema"]["xml"] == {"name": USERS.root_tag, "wrapped": True}
        assert isinstance(USERS.shape, ListOf)
        assert documents["swagger"]["definitions"]["NewUser"]["xml"]["name"] == USERS.shape.item_tag


def test_constraints_match_what_the_services_check(documents: dict[str, dict[str, Any]]) -> None:
    definitions = documents["swagger"]["definitions"]
    pet, order = definitions["Pet"], definitions["Order"]
    assert pet["required"] == ["name", "photoUrls"]
    assert pet["properties"]["status"]["enum"] == list(PET_STATUSES)
    assert pet["properties"]["name"]["maxLength"] == field_rules(pet_pb2.Pet, "name").string.max_len
    assert pet["properties"]["id"] == {
        "type": "integer",
        "format": "int64",
        "minimum": field_rules(pet_pb2.Pet, "id").int64.gt + 1,
        "description": pet["properties"]["id"]["description"],
    }
    assert order["required"] == ["petId"]
    assert order["properties"]["quantity"]["minimum"] == field_rules(order_pb2.Order, "quantity").int32.gte
    assert order["properties"]["status"]["enum"] == list(ORDER_STATUSES)
    assert order["properties"]["shipDate"]["format"] == "date-time"
    assert definitions["NewUser"]["required"] == ["username", "email", "password"]
    assert "password" not in definitions["User"]["properties"]
    webhook, new_webhook = definitions["Webhook"], definitions["NewWebhook"]
    assert new_webhook["required"] == ["url", "eventTypes"]
    for schema in (webhook, new_webhook, definitions["WebhookDelivery"]):
        properties = schema["properties"]
        event_types = (
            properties["eventTypes"]["items"] if "eventTypes" in properties else properties["eventType"]
        )
        assert event_types["enum"] == list(EVENT_TYPES)
    assert "secret" not in webhook["required"]


@pytest.mark.parametrize(
    ("pattern", "matches", "refused"),
    [
        (TEXT_PATTERN, ["", "Rex", "é 😀"], ["a\x00b", "tab\there", "\x85"]),
        (NAME_PATTERN, ["Rex", " Rex ", "😀"], ["", "   ", "a\nb", "\x85Rex"]),
        (
            EMAIL_PATTERN,
            ["a@b", "ann@example.com", "名前@例え.jp"],
            ["", "ann", "a@b@c", "a b@c", "@b", "a@", "a\x01@b", "a\u00a0b@c", "a@b\u3000"],
        ),
        (OPTIONAL_EMAIL_PATTERN, ["", "a@b"], ["ann", "a@", " "]),
        (USERNAME_PATTERN, ["ann", "a.b_c-d@e"], ["", "an n", "änn", "a/b"]),
    ],
)
def test_patterns_say_what_the_services_accept(pattern: str, matches: list[str], refused: list[str]) -> None:
    for text in matches:
        assert re.search(pattern, text), text
    for text in refused:
        assert not re.search(pattern, text), text
