"""The pieces the operations' declarations (routes/) and the description share: the shapes
(`definitions`), common parameters and answers, and the bounds each is published with.

Bounds and patterns of fields are the protos' field rules (protovalidate annotations, which the
services enforce), read from the descriptors: a field's pattern is that of the shared format its
rules name (petstore_common.formats), made not blank where the rules say so. Property names and
XML names mirror `representations/` (a test keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from buf.validate.validate_pb2 import FieldRules, StringRules
from google.protobuf.message import Message

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore.user.v1 import user_pb2, user_service_pb2
from petstore.webhook.v1 import webhook_service_pb2
from petstore_common import formats
from petstore_common.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from petstore_common.rules import enum_names, field_rules
from petstore_gateway.operations import Json
from petstore_gateway.params import (
    LIMIT_PARAM,
    NEXT_PAGE_HEADER,
    PAGE_TOKEN_PARAM,
)
from petstore_gateway.representations.order import DEFAULT_QUANTITY, DEFAULT_STATUS, ORDER_STATUSES
from petstore_gateway.representations.pet import MAX_PHOTO_URLS, MAX_TAGS, PET_STATUSES
from petstore_gateway.representations.user import MAX_USERS_PER_REQUEST
from petstore_gateway.representations.webhook import (
    ATTEMPT_OUTCOMES,
    ENDPOINT_STATES,
    EVENT_TYPE_RULES,
    EVENT_TYPES,
    URL_RULES,
)

_DEFAULT_STATUS_NAME = enum_names(order_pb2.OrderStatus)[DEFAULT_STATUS]

# Bounds and patterns of request fields are the contract's: protovalidate rules on the protos'
# fields, read here from the descriptors, so that a rule changed in a proto (and `make protos`)
# changes what the services check and what both documents publish, at once.


def string_rules(message: type[Message], field: str) -> StringRules:
    return field_rules(message, field).string


def minimum(message: type[Message], field: str) -> int:
    """The least value an integer field's rules let through (gt 0: 1)."""
    rules = field_rules(message, field)
    numbers = rules.int64 if rules.HasField("int64") else rules.int32
    return numbers.gt + 1 if numbers.HasField("gt") else numbers.gte


def min_length(rules: FieldRules) -> int:
    """A required string is at least one character long."""
    return max(rules.string.min_len, 1 if rules.required else 0)


PET_NAME = string_rules(pet_pb2.Pet, "name")
TEXT_PATTERN = formats.TEXT.pattern
"""Text without control characters (Unicode category Cc): every service refuses these in its
text fields."""
NAME_PATTERN = formats.published_pattern(PET_NAME)
"""Text that is not blank."""
ID_MINIMUM = minimum(pet_service_pb2.GetPetRequest, "id")

MAX_PET_NAME_CHARS = PET_NAME.max_len
PHOTO_URLS = field_rules(pet_pb2.Pet, "photo_urls").repeated
TAG_FILTERS = field_rules(pet_service_pb2.ListPetsRequest, "tag_names").repeated
MAX_TAG_NAME_FILTERS = TAG_FILTERS.max_items
IMAGE_METADATA = string_rules(pet_service_pb2.UploadPetImageRequest, "additional_metadata")
IMAGE_METADATA_PATTERN = formats.published_pattern(IMAGE_METADATA)
IMAGE_ID_PATTERN = formats.IMAGE_ID.pattern
QUANTITY = field_rules(order_pb2.Order, "quantity").int32
MIN_QUANTITY = QUANTITY.gte
MAX_QUANTITY = QUANTITY.lte
USERNAME_RULES = field_rules(user_pb2.User, "username")
USERNAME_PATTERN = formats.USERNAME.pattern
EMAIL = string_rules(user_pb2.User, "email")
EMAIL_PATTERN = formats.EMAIL.pattern
OPTIONAL_EMAIL_PATTERN = f"^$|{EMAIL_PATTERN}"
"""An update may leave the email empty, never invalid; a created user always has one."""
LOGIN_PASSWORD = field_rules(user_service_pb2.LoginRequest, "password")
"""At login: accounts from before the password policy keep their shorter passwords."""
NEW_PASSWORD = string_rules(user_service_pb2.CreateUserRequest, "password")
"""A new password (sign-up, change): NIST SP 800-63B, and not a common one."""


def ref(name: str) -> Json:
    return {"$ref": f"#/definitions/{name}"}


def int64(**extra: Any) -> Json:
    return {"type": "integer", "format": "int64", **extra}


def int32(**extra: Any) -> Json:
    return {"type": "integer", "format": "int32", **extra}


def text_schema(rules: StringRules, **extra: Any) -> Json:
    """A string field as its rules bound it (length, pattern; a not-blank one is not empty)."""
    schema: Json = {"type": "string", "maxLength": rules.max_len, "pattern": formats.published_pattern(rules)}
    if formats.NOT_BLANK.on(rules):
        schema["minLength"] = max(rules.min_len, 1)
    return {**schema, **extra}


NO_CONTROL_CHARS = "Control characters are refused."


def id_and_name(message: type[Message], what: str, xml_name: str | None) -> Json:
    schema: Json = {
        "type": "object",
        "description": f"A {what}: either field may be left out.",
        "properties": {
            "id": int64(minimum=minimum(message, "id")),
            "name": text_schema(string_rules(message, "name"), description=NO_CONTROL_CHARS),
        },
    }
    if xml_name:
        schema["xml"] = {"name": xml_name}
    return schema


def user_schema(*, required: Sequence[str], password: bool, strict_email: bool, description: str) -> Json:
    """The User shapes differ only in what is required, whether a password goes in, and
    whether the email must be present (an update may send it empty)."""
    email: Json = {"type": "string", "maxLength": EMAIL.max_len, "pattern": OPTIONAL_EMAIL_PATTERN}
    if strict_email:
        email.update(minLength=EMAIL.min_len, pattern=EMAIL_PATTERN)
    properties: Json = {
        "id": int64(minimum=ID_MINIMUM),  # a new user's id (the user service checks it)
        "username": {
            "type": "string",
            "minLength": min_length(USERNAME_RULES),
            "maxLength": USERNAME_RULES.string.max_len,
            "pattern": USERNAME_PATTERN,
        },
        "firstName": text_schema(string_rules(user_pb2.User, "first_name")),
        "lastName": text_schema(string_rules(user_pb2.User, "last_name")),
        "email": email,
    }
    if password:
        properties["password"] = {
            "type": "string",
            "minLength": NEW_PASSWORD.min_len,
            "maxLength": NEW_PASSWORD.max_len,
            "description": "Stored as a hash; never returned. Not one of the 30,000 most common "
            "passwords (zxcvbn's list), nor the username.",
        }
    properties["phone"] = text_schema(string_rules(user_pb2.User, "phone"))
    properties["userStatus"] = int32(description="User status")
    schema: Json = {"type": "object", "description": description}
    if required:
        schema["required"] = list(required)
    schema.update(properties=properties, xml={"name": "User"})
    return schema


def _event_types(**extra: Any) -> Json:
    return {
        "type": "array",
        "xml": {"wrapped": True},
        "items": {
            "type": "string",
            "enum": list(EVENT_TYPES),
            "maxLength": EVENT_TYPE_RULES.items.string.max_len,
            "xml": {"name": "eventType"},
        },
        **extra,
    }


WEBHOOK_URL_NOTE = (
    "An https URL whose host resolves to no private, loopback, link-local or otherwise reserved "
    "address (unless the webhook service's WEBHOOK_ALLOWED_NETWORKS allows it)."
)


def webhook_definitions() -> Json:
    """A webhook endpoint as registered and as shown, and one delivery attempt to it."""
    return {
        "NewWebhook": {
            "type": "object",
            "description": "An endpoint to register: where to POST which events (signed, Standard Webhooks).",
            "required": ["url", "eventTypes"],
            "properties": {
                "url": {
                    "type": "string",
                    "minLength": URL_RULES.min_len,
                    "maxLength": URL_RULES.max_len,
                    "description": WEBHOOK_URL_NOTE,
                },
                "eventTypes": _event_types(
                    minItems=EVENT_TYPE_RULES.min_items, maxItems=EVENT_TYPE_RULES.max_items
                ),
            },
            "xml": {"name": "Webhook"},
        },
        "Webhook": {
            "type": "object",
            "description": "A registered endpoint.",
            "required": ["id", "url", "eventTypes", "state"],
            "properties": {
                "id": int64(minimum=minimum(webhook_service_pb2.DeleteEndpointRequest, "id")),
                "url": {"type": "string"},
                "eventTypes": _event_types(),
                "state": {
                    "type": "string",
                    "enum": list(ENDPOINT_STATES),
                    "description": "disabled once a delivery failed past the retry limit: nothing "
                    "more is sent to it",
                },
                "disabledReason": {"type": "string", "description": "Why it was disabled"},
                "createdAt": {"type": "string", "format": "date-time"},
                "secret": {
                    "type": "string",
                    "description": "The signing secret (whsec_...): only in the answer that "
                    "registers the endpoint, never again",
                },
            },
            "xml": {"name": "Webhook"},
        },
        "WebhookDelivery": {
            "type": "object",
            "description": "One attempt at delivering one event to the endpoint.",
            "properties": {
                "messageId": {
                    "type": "string",
                    "description": "The event's id, sent as webhook-id (the same on every attempt)",
                },
                "eventType": {"type": "string", "enum": list(EVENT_TYPES)},
                "attempt": int32(minimum=1, description="1 for the first try of this event"),
                "attemptedAt": {"type": "string", "format": "date-time"},
                "outcome": {"type": "string", "enum": list(ATTEMPT_OUTCOMES)},
                "responseStatus": int32(
                    minimum=0, description="The endpoint's HTTP status; 0 when it answered none"
                ),
                "error": {"type": "string", "description": "What went wrong; empty when delivered"},
            },
            "xml": {"name": "WebhookDelivery"},
        },
    }


def definitions() -> Json:
    return {
        "Category": id_and_name(pet_pb2.Category, "category", None),
        "Tag": id_and_name(pet_pb2.Tag, "tag", "tag"),
        "Pet": {
            "type": "object",
            "required": ["name", "photoUrls"],
            "properties": {
                "id": int64(
                    minimum=minimum(pet_pb2.Pet, "id"), description="Chosen by the store when left out."
                ),
                "category": ref("Category"),
                "name": text_schema(
                    PET_NAME,
                    example="doggie",
                    description=f"Not blank. {NO_CONTROL_CHARS}",
                ),
                "photoUrls": {
                    "type": "array",
                    "maxItems": MAX_PHOTO_URLS,
                    "xml": {"wrapped": True},
                    "items": text_schema(PHOTO_URLS.items.string, xml={"name": "photoUrl"}),
                },
                "tags": {
                    "type": "array",
                    "maxItems": MAX_TAGS,
                    "xml": {"wrapped": True},
                    "items": ref("Tag"),
                },
                "status": {
                    "type": "string",
                    "description": "pet status in the store",
                    "enum": list(PET_STATUSES),
                },
            },
            "xml": {"name": "Pet"},
        },
        "Order": {
            "type": "object",
            "required": ["petId"],
            "properties": {
                "id": int64(
                    minimum=minimum(order_pb2.Order, "id"), description="Chosen by the store when left out."
                ),
                "petId": int64(minimum=minimum(order_pb2.Order, "pet_id"), description="A pet that exists."),
                "quantity": int32(minimum=MIN_QUANTITY, maximum=MAX_QUANTITY, default=DEFAULT_QUANTITY),
                "shipDate": {
                    "type": "string",
                    "format": "date-time",
                    "description": "With Z or an offset; answered in UTC with milliseconds.",
                },
                "status": {
                    "type": "string",
                    "description": "Order Status",
                    "enum": list(ORDER_STATUSES),
                    "default": _DEFAULT_STATUS_NAME,
                },
                "complete": {"type": "boolean", "default": False},
            },
            "xml": {"name": "Order"},
        },
        "User": user_schema(
            required=("id", "username"),
            password=False,
            strict_email=False,
            description="A user as the store returns it: never with its password.",
        ),
        "NewUser": user_schema(
            required=("username", "email", "password"),
            password=True,
            strict_email=True,
            description="A user to create.",
        ),
        "UserUpdate": user_schema(
            required=(),
            password=True,
            strict_email=False,
            description=(
                "Replaces the user's fields. Without username the current one is kept; with "
                "another one the user is renamed. Without password the password is kept."
            ),
        ),
        "ApiResponse": {
            "type": "object",
            "required": ["code", "type", "message"],
            "properties": {
                "code": int32(),
                "type": {"type": "string", "description": '"unknown" on success, "error" on errors'},
                "message": {"type": "string"},
            },
            "xml": {"name": "ApiResponse"},
        },
        "Inventory": {
            "type": "object",
            "description": "Pet status name -> number of pets with it (every status, 0 when none "
            "has it). Orders move their pets: a placed order's pet is pending, a delivered order's sold.",
            "additionalProperties": int64(minimum=0),
            "xml": {"name": "inventory"},
        },
        **webhook_definitions(),
    }


# ---------------------------------------------------------------------------------------
# Parameters and responses


def path_id(name: str, what: str, minimum: int) -> Json:
    return {
        "name": name,
        "in": "path",
        "description": f"ID of the {what}",
        "required": True,
        "type": "integer",
        "format": "int64",
        "minimum": minimum,
    }


PET_ID = path_id("petId", "pet", minimum(pet_service_pb2.GetPetRequest, "id"))
ORDER_ID = path_id("orderId", "order", minimum(order_service_pb2.GetOrderRequest, "id"))
WEBHOOK_ID = path_id(
    "webhookId", "webhook endpoint", minimum(webhook_service_pb2.DeleteEndpointRequest, "id")
)
USERNAME = {
    "name": "username",
    "in": "path",
    "description": "The user's username",
    "required": True,
    "type": "string",
    "maxLength": string_rules(user_service_pb2.GetUserRequest, "username").max_len,
    "pattern": formats.published_pattern(string_rules(user_service_pb2.GetUserRequest, "username")),
}


def paging(items: str, request: type[Message]) -> tuple[Json, ...]:
    """limit and pageToken, as `request` (the list call) bounds its page_token."""
    return (
        {
            "name": LIMIT_PARAM,
            "in": "query",
            "description": f"Most {items} to return",
            "required": False,
            "type": "integer",
            "format": "int32",
            "minimum": 1,
            "maximum": MAX_PAGE_SIZE,
            "default": DEFAULT_PAGE_SIZE,
        },
        {
            "name": PAGE_TOKEN_PARAM,
            "in": "query",
            "description": f"The {NEXT_PAGE_HEADER} of the previous page",
            "required": False,
            "type": "string",
            "maxLength": string_rules(request, "page_token").max_len,
        },
    )


PAGING = paging("pets", pet_service_pb2.ListPetsRequest)


def body_parameter(schema: Json, description: str) -> Json:
    return {"in": "body", "name": "body", "description": description, "required": True, "schema": schema}


def users_body() -> Json:
    return body_parameter(
        {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_USERS_PER_REQUEST,
            "items": ref("NewUser"),
            "xml": {"name": "users", "wrapped": True},
        },
        "The users to create, all or none",
    )


def ok(description: str, schema: Json, headers: Json | None = None) -> Json:
    response: Json = {"description": description, "schema": schema}
    if headers:
        response["headers"] = headers
    return response


def ok_message(text: str) -> Json:
    return ok(f"successful operation: an ApiResponse with code 200 and {text}", ref("ApiResponse"))


PETS_RESPONSE = ok(
    "successful operation",
    {"type": "array", "items": ref("Pet"), "xml": {"name": "pets", "wrapped": True}},
    {NEXT_PAGE_HEADER: {"type": "string", "description": f"More pets match: send it as {PAGE_TOKEN_PARAM}"}},
)

ORDERS_RESPONSE = ok(
    "successful operation",
    {"type": "array", "items": ref("Order"), "xml": {"name": "orders", "wrapped": True}},
    {
        NEXT_PAGE_HEADER: {
            "type": "string",
            "description": f"More orders match: send it as {PAGE_TOKEN_PARAM}",
        }
    },
)

INVALID_ID = "Invalid ID supplied"
PET_NOT_FOUND = "Pet not found"
PET_HELD = (
    "An order holds the pet (the message names it): while the order is placed or approved, the "
    "pet's status follows the order and the pet cannot be deleted"
)
ORDER_NOT_FOUND = "Order not found"
USER_NOT_FOUND = "User not found"
STAFF_ONLY_NOTE = "Staff only: a customer's session is refused with 403."
NOT_YOURS = "Order not found, or another customer's (answered exactly as an absent one)"
ORDERS_NOTE = "A customer sees and deletes only its own orders; staff any."
NOT_THE_USER = "Neither staff nor this user"
