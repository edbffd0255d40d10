"""What a service may believe about its caller: only the `Caller` the gateway put in the request,
which the shared server has checked against the call's caller token (petstore_common.caller_gate)
before a servicer reads it.

Each service decides from it what the caller may read or change. A caller that is missing,
of an unknown kind, or a customer without a user id is anonymous: granted nothing a credential
is needed for.
"""

from __future__ import annotations

from petstore.auth.v1 import caller_pb2
from petstore_common.errors import PermissionDenied

Caller = caller_pb2.Caller

STAFF_ONLY = "only staff may do this"
# What a customer or anonymous caller is told by staff-only operations: the gateway refuses
# with these before it reads a body, and the owning service again should a call reach it.
CATALOGUE_STAFF_ONLY = "only staff may change the catalogue"
MOVE_ORDER_STAFF_ONLY = "only staff may move an order on"
BULK_CREATE_STAFF_ONLY = "only staff may create users in bulk"


def staff() -> Caller:
    return Caller(kind=caller_pb2.CALLER_KIND_STAFF)


def customer(user_id: int) -> Caller:
    return Caller(kind=caller_pb2.CALLER_KIND_CUSTOMER, user_id=user_id)


def anonymous() -> Caller:
    return Caller(kind=caller_pb2.CALLER_KIND_ANONYMOUS)


def is_staff(caller: Caller) -> bool:
    return caller.kind == caller_pb2.CALLER_KIND_STAFF


def customer_id(caller: Caller) -> int | None:
    """The customer's user id, or None when the caller is not a customer."""
    if caller.kind == caller_pb2.CALLER_KIND_CUSTOMER and caller.user_id > 0:
        return caller.user_id
    return None


def require_staff(caller: Caller, message: str = STAFF_ONLY) -> None:
    if not is_staff(caller):
        raise PermissionDenied(message)
