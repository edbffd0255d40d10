"""User: wire <-> protobuf. The password is read from requests and never written out."""

from __future__ import annotations

from typing import Any

from petstore.user.v1 import user_pb2, user_service_pb2
from petstore_common.rules import field_rules
from petstore_gateway.representations.fields import as_list, as_object, get_int, get_str
from petstore_gateway.representations.shapes import Document, InvalidRepresentation, ListOf, Obj, Scalar

USER_SHAPE = Obj(
    {
        "id": Scalar.INT,
        "username": Scalar.STR,
        "firstName": Scalar.STR,
        "lastName": Scalar.STR,
        "email": Scalar.STR,
        "password": Scalar.STR,
        "phone": Scalar.STR,
        "userStatus": Scalar.INT,
    }
)
USER = Document("User", USER_SHAPE)
USERS = Document("users", ListOf("User", USER_SHAPE))

MAX_USERS_PER_REQUEST = field_rules(user_service_pb2.CreateUsersRequest, "users").repeated.max_items
"""One user service call carries them all: the service's bound (CreateUsers, in its proto) is
the request's."""


def user_from_wire(value: Any, *, for_create: bool, path: str = "") -> tuple[user_pb2.User, str | None]:
    """The user and the password, if any. Creating needs username, email and password."""
    what = path or "the user"
    data = as_object(value, what)
    user = user_pb2.User(
        username=get_str(data, "username", path=path, required=for_create) or "",
        first_name=get_str(data, "firstName", path=path) or "",
        last_name=get_str(data, "lastName", path=path) or "",
        email=get_str(data, "email", path=path, required=for_create) or "",
        phone=get_str(data, "phone", path=path) or "",
        user_status=get_int(data, "userStatus", path=path, bits=32) or 0,
    )
    user_id = get_int(data, "id", path=path)
    if user_id is not None:
        user.id = user_id
    password = get_str(data, "password", path=path, required=for_create)
    return user, password


def users_from_wire(value: Any) -> list[tuple[user_pb2.User, str]]:
    items = as_list(value, "the request body")
    if not items:
        raise InvalidRepresentation("at least one user is required")
    if len(items) > MAX_USERS_PER_REQUEST:
        raise InvalidRepresentation(f"at most {MAX_USERS_PER_REQUEST} users fit in one request")
    users: list[tuple[user_pb2.User, str]] = []
    for index, item in enumerate(items):
        user, password = user_from_wire(item, for_create=True, path=f"users[{index}]")
        users.append((user, password or ""))
    return users


def public_user_to_wire(user: user_pb2.User) -> dict[str, Any]:
    """What anybody may see of a user: no names, email, phone or status."""
    return {"id": user.id, "username": user.username}


def user_to_wire(user: user_pb2.User) -> dict[str, Any]:
    wire: dict[str, Any] = {}
    if user.HasField("id"):
        wire["id"] = user.id
    wire["username"] = user.username
    # The optional texts are omitted when empty, as a pet's or an order's absent fields are:
    # the record stores no difference between "" and never given.
    for name, value in (("firstName", user.first_name), ("lastName", user.last_name)):
        if value:
            wire[name] = value
    wire["email"] = user.email
    if user.phone:
        wire["phone"] = user.phone
    wire["userStatus"] = user.user_status
    return wire
