"""The Swagger 2.0 description of the API exactly as this gateway serves it.

This is the one source of truth: `openapi.py` derives the OpenAPI 3.0 document from it. What
is derived rather than written down:

- `security` (and the 401 answer) from `access_of`, the rule the auth middleware applies:
  the credential as `api_key` or as `Authorization: Bearer`, either one;
- 400 on every operation: a request whose two credential headers disagree;
- 413 and 415 on every operation that reads a body or a form, and 406, 429 and 503 (both with
  Retry-After) on every operation (all of them call a service); Retry-After on every 409.

Bounds and patterns of fields are the protos' field rules (protovalidate annotations, which the
services enforce), read from the descriptors; property names and XML names mirror
`representations/` (a test keeps the two in step).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from buf.validate.validate_pb2 import FieldRules, StringRules
from google.protobuf.message import Message

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore.user.v1 import user_pb2, user_service_pb2
from petstore_common.idempotency_keys import MAX_KEY_CHARS
from petstore_common.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from petstore_common.rules import field_rules
from petstore_gateway.access import Access, access_of, staff_only_refusal
from petstore_gateway.idempotency import IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER
from petstore_gateway.images import IMAGE_CACHE_CONTROL, IMAGE_HEADERS
from petstore_gateway.middlewares import API_PREFIX
from petstore_gateway.negotiation import OFFERED
from petstore_gateway.params import (
    LIMIT_PARAM,
    NEXT_PAGE_HEADER,
    PAGE_TOKEN_PARAM,
)
from petstore_gateway.representations.order import ORDER_STATUSES
from petstore_gateway.representations.pet import MAX_PHOTO_URLS, MAX_TAGS, PET_STATUSES
from petstore_gateway.representations.user import MAX_USERS_PER_REQUEST

JSON = "application/json"
XML = "application/xml"
BODY_MEDIA_TYPES = (JSON, XML)
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
API_KEY_SCHEME = "api_key"
BEARER_SCHEME = "bearer"
SECURITY: list[dict[str, list[str]]] = [{API_KEY_SCHEME: []}, {BEARER_SCHEME: []}]
"""Either header will do (the alternatives of a security requirement)."""
SECURITY_DEFINITIONS = {
    API_KEY_SCHEME: {
        "type": "apiKey",
        "name": "api_key",
        "in": "header",
        "description": "A static key (PETSTORE_API_KEYS) or the session token GET /user/login returns.",
    },
    # Swagger 2.0 has no bearer scheme: the usual stand-in is an apiKey named Authorization,
    # whose value a client prefixes with "Bearer " (openapi.py turns it into http bearer).
    BEARER_SCHEME: {
        "type": "apiKey",
        "name": "Authorization",
        "in": "header",
        "description": "`Bearer <credential>`: the same static key or session token as api_key. "
        "Send one of the two headers, or both with the same credential.",
    },
}

# Bounds and patterns of request fields are the contract's: protovalidate rules on the protos'
# fields, read here from the descriptors, so that a rule changed in a proto (and `make protos`)
# changes what the services check and what both documents publish, at once.


def _string(message: type[Message], field: str) -> StringRules:
    return field_rules(message, field).string


def _minimum(message: type[Message], field: str) -> int:
    """The least value an integer field's rules let through (gt 0: 1)."""
    rules = field_rules(message, field)
    numbers = rules.int64 if rules.HasField("int64") else rules.int32
    return numbers.gt + 1 if numbers.HasField("gt") else numbers.gte


def _min_length(rules: FieldRules) -> int:
    """A required string is at least one character long."""
    return max(rules.string.min_len, 1 if rules.required else 0)


def _not_blank(text_pattern: str) -> str:
    """`text_pattern`, and at least one character that is no space. A pattern of the form
    ^[^...]*$ (the protos' text) becomes the same class around one such character, which every
    generator and validator of JSON Schema handles; any other takes a lookahead."""
    match = re.fullmatch(r"\^\[\^(.+)\]\*\$", text_pattern)
    if match is None:
        return rf"^(?=.*\S)(?:{text_pattern})"
    chars = match.group(1)
    return rf"^[^{chars}]*[^\s{chars}][^{chars}]*$"


_PET_NAME = _string(pet_pb2.Pet, "name")
TEXT_PATTERN = _PET_NAME.pattern
"""Text without control characters (Unicode category Cc): every service refuses these in its
text fields."""
NAME_PATTERN = _not_blank(TEXT_PATTERN)
"""Text that is not blank."""
ID_MINIMUM = _minimum(pet_service_pb2.GetPetRequest, "id")

MAX_PET_NAME_CHARS = _PET_NAME.max_len
_PHOTO_URLS = field_rules(pet_pb2.Pet, "photo_urls").repeated
_TAG_FILTERS = field_rules(pet_service_pb2.ListPetsRequest, "tag_names").repeated
MAX_TAG_NAME_FILTERS = _TAG_FILTERS.max_items
_IMAGE_METADATA = _string(pet_service_pb2.UploadPetImageRequest, "additional_metadata")
IMAGE_ID_PATTERN = _string(pet_service_pb2.GetPetImageRequest, "image_id").pattern
# pet-service images.py
MAX_IMAGES_PER_PET = 16
MAX_IMAGE_PIXELS = 4096 * 4096
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_PAGE_TOKEN_CHARS = 256
"""Tokens are opaque and short (about 50 characters); longer ones are never valid."""
_QUANTITY = field_rules(order_pb2.Order, "quantity").int32
MIN_QUANTITY = _QUANTITY.gte
MAX_QUANTITY = _QUANTITY.lte
_USERNAME = field_rules(user_pb2.User, "username")
USERNAME_PATTERN = _USERNAME.string.pattern
_EMAIL = _string(user_pb2.User, "email")
EMAIL_PATTERN = _EMAIL.pattern
OPTIONAL_EMAIL_PATTERN = f"^$|{EMAIL_PATTERN}"
"""An update may leave the email empty, never invalid; a created user always has one."""
_LOGIN_PASSWORD = field_rules(user_service_pb2.LoginRequest, "password")
"""At login: accounts from before the password policy keep their shorter passwords."""
_NEW_PASSWORD = _string(user_service_pb2.CreateUserRequest, "password")
"""A new password (sign-up, change): NIST SP 800-63B, and not a common one."""

Json = dict[str, Any]


def ref(name: str) -> Json:
    return {"$ref": f"#/definitions/{name}"}


def _int64(**extra: Any) -> Json:
    return {"type": "integer", "format": "int64", **extra}


def _int32(**extra: Any) -> Json:
    return {"type": "integer", "format": "int32", **extra}


def _text(rules: StringRules, **extra: Any) -> Json:
    """A string field as its rules bound it (length, pattern)."""
    return {"type": "string", "maxLength": rules.max_len, "pattern": rules.pattern, **extra}


NO_CONTROL_CHARS = "Control characters are refused."


def _id_and_name(message: type[Message], what: str, xml_name: str | None) -> Json:
    schema: Json = {
        "type": "object",
        "description": f"A {what}: either field may be left out.",
        "properties": {
            "id": _int64(minimum=_minimum(message, "id")),
            "name": _text(_string(message, "name"), description=NO_CONTROL_CHARS),
        },
    }
    if xml_name:
        schema["xml"] = {"name": xml_name}
    return schema


def _user(*, required: Sequence[str], password: bool, strict_email: bool, description: str) -> Json:
    """The User shapes differ only in what is required, whether a password goes in, and
    whether the email must be present (an update may send it empty)."""
    email: Json = {"type": "string", "maxLength": _EMAIL.max_len, "pattern": OPTIONAL_EMAIL_PATTERN}
    if strict_email:
        email.update(minLength=_EMAIL.min_len, pattern=EMAIL_PATTERN)
    properties: Json = {
        "id": _int64(minimum=ID_MINIMUM),  # a new user's id (the user service checks it)
        "username": {
            "type": "string",
            "minLength": _min_length(_USERNAME),
            "maxLength": _USERNAME.string.max_len,
            "pattern": USERNAME_PATTERN,
        },
        "firstName": _text(_string(user_pb2.User, "first_name")),
        "lastName": _text(_string(user_pb2.User, "last_name")),
        "email": email,
    }
    if password:
        properties["password"] = {
            "type": "string",
            "minLength": _NEW_PASSWORD.min_len,
            "maxLength": _NEW_PASSWORD.max_len,
            "description": "Stored as a hash; never returned. Not one of the 30,000 most common "
            "passwords (zxcvbn's list), nor the username.",
        }
    properties["phone"] = _text(_string(user_pb2.User, "phone"))
    properties["userStatus"] = _int32(description="User status")
    schema: Json = {"type": "object", "description": description}
    if required:
        schema["required"] = list(required)
    schema.update(properties=properties, xml={"name": "User"})
    return schema


def definitions() -> Json:
    return {
        "Category": _id_and_name(pet_pb2.Category, "category", None),
        "Tag": _id_and_name(pet_pb2.Tag, "tag", "tag"),
        "Pet": {
            "type": "object",
            "required": ["name", "photoUrls"],
            "properties": {
                "id": _int64(
                    minimum=_minimum(pet_pb2.Pet, "id"), description="Chosen by the store when left out."
                ),
                "category": ref("Category"),
                "name": _text(
                    _PET_NAME,
                    minLength=1,
                    pattern=NAME_PATTERN,
                    example="doggie",
                    description=f"Not blank. {NO_CONTROL_CHARS}",
                ),
                "photoUrls": {
                    "type": "array",
                    "maxItems": MAX_PHOTO_URLS,
                    "xml": {"wrapped": True},
                    "items": _text(_PHOTO_URLS.items.string, xml={"name": "photoUrl"}),
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
                "id": _int64(
                    minimum=_minimum(order_pb2.Order, "id"), description="Chosen by the store when left out."
                ),
                "petId": _int64(
                    minimum=_minimum(order_pb2.Order, "pet_id"), description="A pet that exists."
                ),
                "quantity": _int32(minimum=MIN_QUANTITY, maximum=MAX_QUANTITY, default=1),
                "shipDate": {
                    "type": "string",
                    "format": "date-time",
                    "description": "With Z or an offset; answered in UTC with milliseconds.",
                },
                "status": {
                    "type": "string",
                    "description": "Order Status",
                    "enum": list(ORDER_STATUSES),
                    "default": "placed",
                },
                "complete": {"type": "boolean", "default": False},
            },
            "xml": {"name": "Order"},
        },
        "User": _user(
            required=("id", "username"),
            password=False,
            strict_email=False,
            description="A user as the store returns it: never with its password.",
        ),
        "NewUser": _user(
            required=("username", "email", "password"),
            password=True,
            strict_email=True,
            description="A user to create.",
        ),
        "UserUpdate": _user(
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
                "code": _int32(),
                "type": {"type": "string", "description": '"unknown" on success, "error" on errors'},
                "message": {"type": "string"},
            },
            "xml": {"name": "ApiResponse"},
        },
        "Inventory": {
            "type": "object",
            "description": "Pet status name -> number of pets; statuses without pets are left out.",
            "additionalProperties": _int64(minimum=0),
            "xml": {"name": "inventory"},
        },
    }


# ---------------------------------------------------------------------------------------
# Parameters and responses


def _path_id(name: str, what: str, minimum: int) -> Json:
    return {
        "name": name,
        "in": "path",
        "description": f"ID of the {what}",
        "required": True,
        "type": "integer",
        "format": "int64",
        "minimum": minimum,
    }


PET_ID = _path_id("petId", "pet", _minimum(pet_service_pb2.GetPetRequest, "id"))
ORDER_ID = _path_id("orderId", "order", _minimum(order_service_pb2.GetOrderRequest, "id"))
USERNAME = {
    "name": "username",
    "in": "path",
    "description": "The user's username",
    "required": True,
    "type": "string",
    "maxLength": _string(user_service_pb2.GetUserRequest, "username").max_len,
    "pattern": _string(user_service_pb2.GetUserRequest, "username").pattern,
}


def _paging(items: str) -> tuple[Json, ...]:
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
            "maxLength": MAX_PAGE_TOKEN_CHARS,
        },
    )


PAGING = _paging("pets")


def _body(schema: Json, description: str) -> Json:
    return {"in": "body", "name": "body", "description": description, "required": True, "schema": schema}


def _users_body() -> Json:
    return _body(
        {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_USERS_PER_REQUEST,
            "items": ref("NewUser"),
            "xml": {"name": "users", "wrapped": True},
        },
        "The users to create, all or none",
    )


def _ok(description: str, schema: Json, headers: Json | None = None) -> Json:
    response: Json = {"description": description, "schema": schema}
    if headers:
        response["headers"] = headers
    return response


def _message(text: str) -> Json:
    return _ok(f"successful operation: an ApiResponse with code 200 and {text}", ref("ApiResponse"))


PETS_RESPONSE = _ok(
    "successful operation",
    {"type": "array", "items": ref("Pet"), "xml": {"name": "pets", "wrapped": True}},
    {NEXT_PAGE_HEADER: {"type": "string", "description": f"More pets match: send it as {PAGE_TOKEN_PARAM}"}},
)

ORDERS_RESPONSE = _ok(
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
ORDER_NOT_FOUND = "Order not found"
USER_NOT_FOUND = "User not found"
STAFF_ONLY_NOTE = "Staff only: a customer's session is refused with 403."
NOT_YOURS = "Order not found, or another customer's (answered exactly as an absent one)"
ORDERS_NOTE = "A customer sees and deletes only its own orders; staff any."
NOT_THE_USER = "Neither staff nor this user"


@dataclass(frozen=True, slots=True)
class Operation:
    method: str
    path: str
    """Under the basePath, e.g. /pet/{petId}."""
    operation_id: str
    tag: str
    summary: str
    success: Json
    errors: Mapping[int, str]
    """The statuses particular to the operation; the derived ones are added by `_render`."""
    parameters: tuple[Json, ...] = ()
    consumes: tuple[str, ...] = ()
    description: str = ""
    idempotent: bool = False
    """Takes an Idempotency-Key (a create): its header, 409 and 422 are added by `_render`."""
    conditional_read: bool = False
    """Answers with an ETag and honours If-None-Match (304): added by `_render`."""
    conditional_write: bool = False
    """Honours If-Match (412): added by `_render`."""
    produces: tuple[str, ...] = BODY_MEDIA_TYPES
    """What its answers may be (an image: its own type, and errors in JSON or XML)."""


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "post",
        "/pet",
        "addPet",
        "pet",
        "Add a new pet to the store",
        _ok("successful operation: the stored pet", ref("Pet")),
        {400: "Malformed body", 405: "Invalid input", 409: "A pet with this id exists"},
        (_body(ref("Pet"), "The pet to add; the store picks the id when none is given"),),
        BODY_MEDIA_TYPES,
        description=STAFF_ONLY_NOTE,
        idempotent=True,
    ),
    Operation(
        "put",
        "/pet",
        "updatePet",
        "pet",
        "Update an existing pet",
        _ok("successful operation: the stored pet", ref("Pet")),
        {
            400: "Malformed body",
            404: PET_NOT_FOUND,
            405: "Validation exception (id is required)",
        },
        (_body(ref("Pet"), "The pet, with its id; every field is replaced"),),
        BODY_MEDIA_TYPES,
        description=STAFF_ONLY_NOTE,
        conditional_write=True,
    ),
    Operation(
        "get",
        "/pet/findByStatus",
        "findPetsByStatus",
        "pet",
        "Finds Pets by status",
        PETS_RESPONSE,
        {400: "Invalid status value, limit or pageToken"},
        (
            {
                "name": "status",
                "in": "query",
                "description": "Status values to match: repeat the parameter or separate values by "
                "commas (status[]=a and status[0]=a are read too)",
                "required": True,
                "type": "array",
                "minItems": 1,
                "items": {"type": "string", "enum": list(PET_STATUSES)},
                "collectionFormat": "multi",
            },
            *PAGING,
        ),
        description="Pets in id order, a page at a time.",
    ),
    Operation(
        "get",
        "/pet/findByTags",
        "findPetsByTags",
        "pet",
        "Finds Pets by tags",
        PETS_RESPONSE,
        {400: "Invalid tag value, limit or pageToken"},
        (
            {
                "name": "tags",
                "in": "query",
                "description": "Tag names to match (any of them): repeat the parameter or separate by "
                "commas (tags[]=a and tags[0]=a are read too)",
                "required": True,
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_TAG_NAME_FILTERS,
                "items": _text(_TAG_FILTERS.items.string, minLength=_TAG_FILTERS.items.string.min_len),
                "collectionFormat": "multi",
            },
            *PAGING,
        ),
        description="Pets in id order, a page at a time.",
    ),
    Operation(
        "get",
        "/pet/{petId}",
        "getPetById",
        "pet",
        "Find pet by ID",
        _ok("successful operation", ref("Pet")),
        {400: INVALID_ID, 404: PET_NOT_FOUND},
        (PET_ID,),
        conditional_read=True,
    ),
    Operation(
        "post",
        "/pet/{petId}",
        "updatePetWithForm",
        "pet",
        "Updates a pet in the store with form data",
        _message("the pet's id as message"),
        {400: "Invalid ID or form supplied", 404: PET_NOT_FOUND, 405: "Invalid input"},
        (
            PET_ID,
            {
                "name": "name",
                "in": "formData",
                "description": "New name of the pet",
                "required": False,
                "type": "string",
                "maxLength": MAX_PET_NAME_CHARS,
                "pattern": NAME_PATTERN,
            },
            {
                "name": "status",
                "in": "formData",
                "description": "New status of the pet",
                "required": False,
                "type": "string",
                "enum": list(PET_STATUSES),
            },
        ),
        (FORM, MULTIPART),
        description=f"Only the fields sent change. {STAFF_ONLY_NOTE}",
        conditional_write=True,
    ),
    Operation(
        "delete",
        "/pet/{petId}",
        "deletePet",
        "pet",
        "Deletes a pet",
        _message("the pet's id as message"),
        {400: INVALID_ID, 404: PET_NOT_FOUND},
        (PET_ID,),
        description=STAFF_ONLY_NOTE,
    ),
    Operation(
        "post",
        "/pet/{petId}/uploadImage",
        "uploadFile",
        "pet",
        "uploads an image",
        _message("the stored image's id and size in message"),
        {
            400: "Invalid ID, form, additionalMetadata or image (a PNG, JPEG, GIF or WebP that decodes "
            f"whole, at most {MAX_IMAGE_PIXELS} pixels), or a Host header that is no host",
            404: PET_NOT_FOUND,
            409: f"The pet has {MAX_IMAGES_PER_PET} images, or {MAX_PHOTO_URLS} photoUrls, already",
        },
        (
            PET_ID,
            {
                "name": "additionalMetadata",
                "in": "formData",
                "description": "Additional data to pass to server",
                "required": False,
                "type": "string",
                "maxLength": _IMAGE_METADATA.max_len,
                "pattern": _IMAGE_METADATA.pattern,
            },
            {
                "name": "file",
                "in": "formData",
                "description": "The image: PNG, JPEG, GIF or WebP, decoded before it is stored (its own "
                "Content-Type is not believed)",
                "required": True,
                "type": "file",
            },
        ),
        (MULTIPART,),
        description=f"{STAFF_ONLY_NOTE} The image is served at /pet/{{petId}}/images/{{imageId}}; that URL, "
        "absolute, is added to the pet's photoUrls (the pet's version moves on) and named in message. "
        f"At most {MAX_IMAGES_PER_PET} images per pet; they are deleted with their pet.",
    ),
    Operation(
        "get",
        "/pet/{petId}/images/{imageId}",
        "getPetImage",
        "pet",
        "An uploaded image of a pet",
        _ok(
            "The image, in the media type it was stored with",
            {"type": "string", "format": "binary"},
            {
                "Cache-Control": {"type": "string", "enum": [IMAGE_CACHE_CONTROL]},
                "X-Content-Type-Options": {
                    "type": "string",
                    "enum": [IMAGE_HEADERS["X-Content-Type-Options"]],
                },
            },
        ),
        {400: "Invalid petId or imageId", 404: "The pet has no such image"},
        (
            PET_ID,
            {
                "name": "imageId",
                "in": "path",
                "description": "ID of the image, as uploadFile named it",
                "required": True,
                "type": "string",
                "pattern": IMAGE_ID_PATTERN,
            },
        ),
        description="Open to anyone. An image never changes: its ETag holds for ever; any cache may keep it.",
        conditional_read=True,
        produces=(*IMAGE_MEDIA_TYPES, *BODY_MEDIA_TYPES),
    ),
    Operation(
        "get",
        "/store/inventory",
        "getInventory",
        "store",
        "Returns pet inventories by status",
        _ok("successful operation", ref("Inventory")),
        {},
    ),
    Operation(
        "post",
        "/store/order",
        "placeOrder",
        "store",
        "Place an order for a pet",
        _ok("successful operation: the stored order", ref("Order")),
        {400: "Invalid Order", 404: "No pet with this petId", 409: "An order with this id exists"},
        (_body(ref("Order"), "The order; the store picks the id when none is given"),),
        BODY_MEDIA_TYPES,
        description="An order placed with a customer's session belongs to that customer; "
        "one placed with a static key belongs to no customer.",
        idempotent=True,
    ),
    Operation(
        "get",
        "/store/order",
        "listOrders",
        "store",
        "Lists orders: a customer's own, or any for staff",
        ORDERS_RESPONSE,
        {
            400: "Invalid status, petId, username, limit or pageToken",
            403: "A customer named another user as username",
            404: "No user has this username",
        },
        (
            {
                "name": "status",
                "in": "query",
                "description": "Only orders with any of these statuses (all when left out): repeat the "
                "parameter or separate values by commas (status[]=a and status[0]=a are read too)",
                "required": False,
                "type": "array",
                "items": {"type": "string", "enum": list(ORDER_STATUSES)},
                "collectionFormat": "multi",
            },
            {
                "name": "petId",
                "in": "query",
                "description": "Only orders of this pet",
                "required": False,
                "type": "integer",
                "format": "int64",
                "minimum": _minimum(order_service_pb2.ListOrdersRequest, "pet_id"),
            },
            {
                "name": "username",
                "in": "query",
                "description": "Only orders this user placed (staff; a customer may name only itself)",
                "required": False,
                "type": "string",
                "minLength": _min_length(_USERNAME),
                "maxLength": _USERNAME.string.max_len,
                "pattern": USERNAME_PATTERN,
            },
            *_paging("orders"),
        ),
        description="Orders in id order, a page at a time. A customer sees only its own orders and "
        "naming another user is 403; staff see every order, including those placed with a static key.",
    ),
    Operation(
        "get",
        "/store/order/{orderId}",
        "getOrderById",
        "store",
        "Find purchase order by ID",
        _ok("successful operation", ref("Order")),
        {400: INVALID_ID, 404: NOT_YOURS},
        (ORDER_ID,),
        description=ORDERS_NOTE,
    ),
    Operation(
        "delete",
        "/store/order/{orderId}",
        "deleteOrder",
        "store",
        "Delete purchase order by ID",
        _message("the order's id as message"),
        {400: INVALID_ID, 404: NOT_YOURS},
        (ORDER_ID,),
        description=ORDERS_NOTE,
    ),
    Operation(
        "put",
        "/store/order/{orderId}",
        "updateOrderStatus",
        "store",
        "Move an order on: placed to approved, approved to delivered",
        _ok("successful operation: the order as stored", ref("Order")),
        {
            400: "Invalid ID, a body without a valid status, or a body id other than orderId",
            404: ORDER_NOT_FOUND,
            409: "The order cannot move to this status from where it is (the message names the next one)",
        },
        (ORDER_ID, _body(ref("Order"), "An Order: only status is read (and id, which must be orderId)")),
        BODY_MEDIA_TYPES,
        description="Staff only. delivered also completes the order; asking for the status the order "
        "already has changes nothing.",
    ),
    Operation(
        "post",
        "/user",
        "createUser",
        "user",
        "Create user",
        _message("the new user's id as message"),
        {400: "Invalid user", 409: "The username or id is taken"},
        (_body(ref("NewUser"), "The user to create"),),
        BODY_MEDIA_TYPES,
        description="Open to everyone: this is how one signs up. userStatus is staff-managed: "
        "it is kept only when a static key is sent, else the new user has 0.",
        idempotent=True,
    ),
    Operation(
        "post",
        "/user/createWithArray",
        "createUsersWithArrayInput",
        "user",
        "Creates list of users with given input array",
        _message('"ok" as message'),
        {
            400: "Invalid users (the message names the first)",
            409: "A username or id is taken",
        },
        (_users_body(),),
        BODY_MEDIA_TYPES,
        description="Staff only.",
        idempotent=True,
    ),
    Operation(
        "post",
        "/user/createWithList",
        "createUsersWithListInput",
        "user",
        "Creates list of users with given input array",
        _message('"ok" as message'),
        {
            400: "Invalid users (the message names the first)",
            409: "A username or id is taken",
        },
        (_users_body(),),
        BODY_MEDIA_TYPES,
        description="Staff only.",
        idempotent=True,
    ),
    Operation(
        "get",
        "/user/login",
        "loginUser",
        "user",
        "Logs user into the system",
        _ok(
            "successful operation: message is `logged in user session:<token>`; send the token "
            "as api_key until it expires or you log out",
            ref("ApiResponse"),
            {
                "X-Rate-Limit": _int32(
                    description="logins per hour allowed from this address: the tightest of "
                    "LOGIN_RATE_LIMIT_PER_MINUTE x 60 and RATE_LIMIT_PER_SECOND x 3600; "
                    "absent when both limits are off"
                ),
                "X-Expires-After": {
                    "type": "string",
                    "format": "date-time",
                    "description": "date in UTC when the session expires",
                },
            },
        ),
        {400: "Invalid username/password supplied", 404: USER_NOT_FOUND},
        (
            {
                "name": "username",
                "in": "query",
                "description": "The user name for login",
                "required": True,
                "type": "string",
                "minLength": _min_length(field_rules(user_service_pb2.LoginRequest, "username")),
                "maxLength": _string(user_service_pb2.LoginRequest, "username").max_len,
            },
            {
                "name": "password",
                "in": "query",
                "description": "The password for login in clear text",
                "required": True,
                "type": "string",
                "minLength": _min_length(_LOGIN_PASSWORD),
                "maxLength": _NEW_PASSWORD.max_len,  # no stored password is longer
            },
        ),
    ),
    Operation(
        "get",
        "/user/logout",
        "logoutUser",
        "user",
        "Logs out current logged in user session",
        _message('"ok" as message'),
        {},
        (
            {
                "name": "api_key",
                "in": "header",
                "description": "The session token to end (or send it as Authorization: Bearer); "
                "anything else is ignored",
                "required": False,
                "type": "string",
            },
        ),
        description="Ends the session sent as api_key or Bearer, if it is one; ok in every case.",
    ),
    Operation(
        "get",
        "/user/{username}",
        "getUserByName",
        "user",
        "Get user by user name",
        _ok("successful operation", ref("User")),
        {400: "Invalid username supplied", 404: USER_NOT_FOUND},
        (USERNAME,),
        description="Anyone sees a user's id and username; the user itself (its session) and "
        "staff see the whole record.",
        conditional_read=True,
    ),
    Operation(
        "put",
        "/user/{username}",
        "updateUser",
        "user",
        "Updated user",
        _message("the user's id as message"),
        {
            400: "Invalid user supplied",
            403: NOT_THE_USER,
            404: USER_NOT_FOUND,
            409: "The new username is taken",
        },
        (USERNAME, _body(ref("UserUpdate"), "The user's new fields")),
        BODY_MEDIA_TYPES,
        description="Staff may change any user; a session only its own, and never its id or "
        "userStatus (the stored values are kept).",
        conditional_write=True,
    ),
    Operation(
        "delete",
        "/user/{username}",
        "deleteUser",
        "user",
        "Delete user",
        _message("the username as message"),
        {
            400: "Invalid username supplied",
            403: NOT_THE_USER,
            404: USER_NOT_FOUND,
        },
        (USERNAME,),
        description="Staff may delete any user; a session only its own.",
    ),
)


CREDENTIAL_CONFLICT = "api_key and Authorization: Bearer name different credentials"


def _derived_errors(op: Operation, max_body_bytes: int) -> dict[int, str]:
    errors: dict[int, str] = {400: CREDENTIAL_CONFLICT}
    method, route = op.method.upper(), API_PREFIX + op.path
    access = access_of(method, route)
    if access in (Access.REQUIRED, Access.STAFF):
        errors[401] = "Credential (api_key or Bearer) missing, unknown, expired or logged out"
        if access is Access.STAFF:
            errors[403] = f"Not staff (a static api key): {staff_only_refusal(method, route)}"
    elif access is Access.OPTIONAL:
        errors[401] = (
            "Credential (api_key or Bearer) sent but unknown, expired or logged out (it may be left out)"
        )
    if op.consumes:
        errors[413] = f"Request body larger than {max_body_bytes} bytes"
        if JSON in op.consumes:
            errors[415] = (
                f"Content-Type not one of {', '.join(op.consumes)} (a body without one is read as JSON)"
            )
        else:
            errors[415] = f"Content-Type missing or not one of {', '.join(op.consumes)}"
    if op.produces == BODY_MEDIA_TYPES:  # an image is served whatever Accept says
        offered = ", ".join(t.content_type for t in OFFERED)
        errors[406] = f"Accept allows none of {offered} (the error is then JSON)"
    if op.conditional_write:
        errors[412] = "If-Match names a version that is no longer the stored one, or nothing is stored"
    if op.idempotent:
        errors[409] = "A request with this Idempotency-Key is still being processed"
        errors[422] = "This Idempotency-Key was already used with a different request"
    errors[429] = "Too many requests from this client, or a service at capacity: retry later"
    errors[503] = "A service is unavailable or did not answer in time"
    return errors


IDEMPOTENCY_KEY: Json = {
    "name": IDEMPOTENCY_KEY_HEADER,
    "in": "header",
    "description": "Makes retries safe: the same key with the same body within 24 hours has no second "
    "effect and gets the first answer again. Keys are per caller.",
    "required": False,
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_KEY_CHARS,
    "pattern": "^[!-~]+$",
}
REPLAYED: Json = {
    REPLAYED_HEADER: {
        "type": "string",
        "enum": ["true"],
        "description": "This is the first answer to the key, again",
    }
}


ETAG_HEADER: Json = {
    "ETag": {"type": "string", "description": "A strong tag of this representation (JSON and XML differ)"}
}
IF_MATCH: Json = {
    "name": "If-Match",
    "in": "header",
    "description": "Write only if the stored version is the one this ETag names, else 412; * only "
    "asks that it exist",
    "required": False,
    "type": "string",
}


def _render(op: Operation, max_body_bytes: int) -> Json:
    errors = {**_derived_errors(op, max_body_bytes), **op.errors}
    if 400 in op.errors:
        errors[400] = f"{op.errors[400]}; or {CREDENTIAL_CONFLICT}"
    if op.idempotent and 409 in op.errors:  # both conflicts share the status
        errors[409] = f"{op.errors[409]}, or a request with this Idempotency-Key is still being processed"
    success = op.success
    if op.idempotent:
        success = {**success, "headers": {**success.get("headers", {}), **REPLAYED}}
    if op.conditional_read:
        success = {**success, "headers": {**success.get("headers", {}), **ETAG_HEADER}}
    responses: Json = {"200": success}
    if op.conditional_read:
        responses["304"] = {
            "description": "Not modified: If-None-Match names the current ETag",
            "headers": ETAG_HEADER,
        }
    for status in sorted(errors):
        responses[str(status)] = {"description": errors[status], "schema": ref("ApiResponse")}
    responses["429"]["headers"] = {"Retry-After": _int32(minimum=1, description="Seconds to wait")}
    responses["503"]["headers"] = {"Retry-After": _int32(minimum=1, description="Seconds to wait")}
    if "409" in responses:
        # Only while another request holds what this one needs: waiting may help.
        retry = _int32(minimum=1, description="Seconds to wait, when another request is still running")
        responses["409"]["headers"] = {"Retry-After": retry}
    rendered: Json = {"tags": [op.tag], "summary": op.summary}
    if op.description:
        rendered["description"] = op.description
    rendered["operationId"] = op.operation_id
    if op.consumes:
        rendered["consumes"] = list(op.consumes)
    rendered["produces"] = list(op.produces)
    rendered["parameters"] = [dict(parameter) for parameter in op.parameters]
    if op.idempotent:
        rendered["parameters"].append(dict(IDEMPOTENCY_KEY))
    if op.conditional_write:
        rendered["parameters"].append(dict(IF_MATCH))
    rendered["responses"] = responses
    access = access_of(op.method.upper(), API_PREFIX + op.path)
    if access is not Access.OPEN:
        rendered["security"] = [{name: list(scopes) for name, scopes in r.items()} for r in SECURITY]
        if access is Access.OPTIONAL:
            rendered["security"].append({})  # {}: no credential is fine too
    return rendered


DESCRIPTION = """\
The classic Petstore v2 interface, served by a gateway in front of the pet, order and user \
services.

- JSON or XML both ways: choose the answer with `Accept`, declare a body with `Content-Type`.
- Callers: a static `api_key` is staff; the token `GET /user/login` returns, sent as `api_key`, \
is that customer; no key is anonymous. Anyone reads the catalogue and signs up; only staff \
change the catalogue; a customer places orders and sees and deletes only its own, and reads and \
changes only its own account (others' accounts show their id and username only). \
`Authorization: Bearer <the same credential>` works wherever `api_key` does; two headers naming \
different credentials are a 400.
- A body without `Content-Type` is read as JSON. Array query parameters may be repeated \
(`status=a&status=b`), comma-separated (`status=a,b`) or indexed (`status[]=a`, `status[0]=a`).
- Every error has one shape, an ApiResponse `{code, type: "error", message}`, except for requests \
the HTTP server cannot read at all: a request line (method, path and query) or a header longer \
than 8190 bytes is refused before it reaches the API, with a plain-text 400.
"""


def build_swagger(*, max_body_bytes: int) -> Json:
    """The whole Swagger 2.0 document. No host: clients use the one they fetched it from."""
    paths: Json = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _render(op, max_body_bytes)
    return {
        "swagger": "2.0",
        "info": {"title": "Petstore", "version": "1.0.0", "description": DESCRIPTION},
        "basePath": API_PREFIX,
        "tags": [
            {"name": "pet", "description": "Pets, their photos and their status"},
            {"name": "store", "description": "Orders and the inventory"},
            {"name": "user", "description": "Accounts and sessions"},
        ],
        "paths": paths,
        "securityDefinitions": {name: dict(scheme) for name, scheme in SECURITY_DEFINITIONS.items()},
        "definitions": definitions(),
    }
