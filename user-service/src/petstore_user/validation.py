"""The service is the authority on values and bounds: each check raises InvalidArgument."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from petstore.user.v1 import user_pb2, user_service_pb2
from petstore_common.contract_bounds import MAX_USERS_PER_BATCH
from petstore_common.errors import InvalidArgument
from petstore_user.passwords import check_password
from petstore_user.storage.base import check_distinct, in_batch

MAX_USERNAME_CHARS = 64
MIN_EMAIL_CHARS = 3
MAX_EMAIL_CHARS = 254
MAX_TEXT_CHARS = 256

# ASCII only: usernames appear in URLs, logs and messages, and look-alike letters from other
# scripts could impersonate someone.
_USERNAME = re.compile(r"[A-Za-z0-9._@-]+")


def check_id(value: int, field: str = "id") -> int:
    """Ids are 1..2^63-1; int64 already bounds the top."""
    if value <= 0:
        raise InvalidArgument(f"{field} must be positive")
    return value


def check_username(value: str, field: str = "username") -> str:
    if not value:
        raise InvalidArgument(f"{field} is required")
    if len(value) > MAX_USERNAME_CHARS:
        raise InvalidArgument(f"{field} must be at most {MAX_USERNAME_CHARS} characters")
    if not _USERNAME.fullmatch(value):
        raise InvalidArgument(f"{field} may contain only letters, digits and . _ - @")
    return value


def check_email(value: str, field: str = "email") -> None:
    if not value:
        raise InvalidArgument(f"{field} is required")
    check_text(value, field, max_chars=MAX_EMAIL_CHARS)
    local, _, domain = value.partition("@")
    if (
        len(value) < MIN_EMAIL_CHARS
        or value.count("@") != 1
        or not local
        or not domain
        or any(char.isspace() for char in value)
    ):
        raise InvalidArgument(f"{field} must look like an email")


def check_text(value: str, field: str, *, max_chars: int = MAX_TEXT_CHARS) -> None:
    if len(value) > max_chars:
        raise InvalidArgument(f"{field} must be at most {max_chars} characters")
    if any(unicodedata.category(char) == "Cc" for char in value):
        raise InvalidArgument(f"{field} must not contain control characters")


def check_user(user: user_pb2.User, *, for_create: bool) -> None:
    """A user to store. Creating needs an email; an update (a full replace, as the gateway
    sends it) may leave it empty, but never invalid. The id counts only when creating: an
    update keeps the stored id whatever the message says."""
    if for_create and user.HasField("id"):
        check_id(user.id)
    check_username(user.username)
    if for_create or user.email:
        check_email(user.email)
    check_text(user.first_name, "firstName")
    check_text(user.last_name, "lastName")
    check_text(user.phone, "phone")


def check_new_user(request: user_service_pb2.CreateUserRequest) -> None:
    check_user(request.user, for_create=True)
    check_password(request.password, username=request.user.username)


def check_new_users(requests: Sequence[user_service_pb2.CreateUserRequest]) -> None:
    """Every user of a batch, the first problem named by its position (users[i]: ...)."""
    if not requests:
        raise InvalidArgument("at least one user is required")
    if len(requests) > MAX_USERS_PER_BATCH:
        raise InvalidArgument(f"at most {MAX_USERS_PER_BATCH} users fit in one request")
    for index, request in enumerate(requests):
        try:
            check_new_user(request)
        except InvalidArgument as exc:
            check_distinct([earlier.user for earlier in requests[:index]])  # a repeat before it comes first
            raise InvalidArgument(in_batch(index, exc.message)) from None
    check_distinct([request.user for request in requests])


def check_update(request: user_service_pb2.UpdateUserRequest) -> str:
    """The current username of the user to update, once the new values are checked."""
    username = check_username(request.username)
    check_user(request.user, for_create=False)
    if request.HasField("password"):
        check_password(request.password, username=request.user.username)
    return username
