"""The service is the authority on values and bounds: each check raises InvalidArgument.

The field rules (usernames, emails, text lengths, password lengths, batch sizes) are annotations
in the protos, checked on every request by the shared server interceptor before a servicer
method runs; REQUEST_RULES words them (and the fields of a new user refused here) for gateways
before 1.1.0 as well (petstore_common.request_validation). What is left here depends on the RPC
or on several values: a new user's id and email (an update ignores the id and may leave the
email empty), the password lists and the username, and repeats within a batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from petstore.user.v1 import user_pb2, user_service_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.field_violations import FieldViolation
from petstore_common.request_validation import RequestValidator
from petstore_user.passwords import check_password
from petstore_user.storage.base import check_distinct, in_batch

REQUEST_RULES = RequestValidator()


def check_user(user: user_pb2.User, *, for_create: bool) -> None:
    """A user to store. Creating needs an email; an update (a full replace, as the gateway
    sends it) may leave it empty (the rules keep it valid when given). The id counts only when
    creating: an update keeps the stored id whatever the message says."""
    if not for_create:
        return
    if user.HasField("id") and user.id <= 0:
        raise _refused(FieldViolation("user.id", "int64.gt", "must be positive"))
    if not user.email:
        raise _refused(FieldViolation.required("user.email"))


def _refused(violation: FieldViolation) -> InvalidArgument:
    """A field of the user a CreateUserRequest carries."""
    return REQUEST_RULES.refused(user_service_pb2.CreateUserRequest.DESCRIPTOR, violation)


def check_new_user(request: user_service_pb2.CreateUserRequest) -> None:
    check_user(request.user, for_create=True)
    check_password(request.password, username=request.user.username)


def check_new_users(requests: Sequence[user_service_pb2.CreateUserRequest]) -> None:
    """Every user of a batch, the first problem named by its position (users[i]: ...). The field
    rules of every user were checked before (the interceptor names the first user breaking one)."""
    for index, request in enumerate(requests):
        try:
            check_new_user(request)
        except InvalidArgument as exc:
            check_distinct([earlier.user for earlier in requests[:index]])  # a repeat before it comes first
            raise InvalidArgument(in_batch(index, exc.message)) from None
    check_distinct([request.user for request in requests])


def check_update(request: user_service_pb2.UpdateUserRequest) -> None:
    """The new values of an update, beyond their field rules."""
    check_user(request.user, for_create=False)
    if request.HasField("password"):
        check_password(request.password, username=request.user.username)
