"""Who may call each operation, by kind of caller: the function-level rule, applied by the
auth middleware before a body is read, and the source of each operation's `security`, 401 and
403 in the API description. Which object a caller may read or change (its own orders, its own
account) is decided by the service that owns it, from the Caller it receives."""

from __future__ import annotations

from enum import Enum

from petstore_common.callers import (
    BULK_CREATE_STAFF_ONLY,
    CATALOGUE_STAFF_ONLY,
    MOVE_ORDER_STAFF_ONLY,
)


class Access(Enum):
    OPEN = "open"
    """The credential is not read: everybody is served alike (the catalogue, login, logout)."""
    OPTIONAL = "optional"
    """Anonymous without a credential; a credential that is sent must be valid (401 if not)."""
    REQUIRED = "required"
    """401 without a valid credential."""
    STAFF = "staff"
    """401 without a valid credential, 403 unless it is a static key."""


_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_ROUTES = {
    # Orders are private: nobody reads one, or a list of them, without saying who they are.
    ("GET", "/v2/store/order"): Access.REQUIRED,
    ("HEAD", "/v2/store/order"): Access.REQUIRED,
    ("GET", "/v2/store/order/{orderId}"): Access.REQUIRED,
    ("HEAD", "/v2/store/order/{orderId}"): Access.REQUIRED,
    # Anyone sees the public view of a user; the user itself and staff see the whole record.
    ("GET", "/v2/user/{username}"): Access.OPTIONAL,
    ("HEAD", "/v2/user/{username}"): Access.OPTIONAL,
    # Signing up is open; staff signing somebody up may set staff-managed fields.
    ("POST", "/v2/user"): Access.OPTIONAL,
}
_STAFF_ONLY = {
    ("POST", "/v2/pet"): CATALOGUE_STAFF_ONLY,
    ("PUT", "/v2/pet"): CATALOGUE_STAFF_ONLY,
    ("POST", "/v2/pet/{petId}"): CATALOGUE_STAFF_ONLY,
    ("DELETE", "/v2/pet/{petId}"): CATALOGUE_STAFF_ONLY,
    ("POST", "/v2/pet/{petId}/uploadImage"): CATALOGUE_STAFF_ONLY,
    ("PUT", "/v2/store/order/{orderId}"): MOVE_ORDER_STAFF_ONLY,
    ("POST", "/v2/user/createWithArray"): BULK_CREATE_STAFF_ONLY,
    ("POST", "/v2/user/createWithList"): BULK_CREATE_STAFF_ONLY,
}
"""Staff-only operations and what anybody else is told (403)."""


def access_of(method: str, route: str) -> Access:
    """Reads are open and writes need a credential, but for the routes named above."""
    if (method, route) in _STAFF_ONLY:
        return Access.STAFF
    return _ROUTES.get((method, route)) or (Access.OPEN if method in _READS else Access.REQUIRED)


def staff_only_refusal(method: str, route: str) -> str:
    """The 403 message of a staff-only operation (KeyError for any other)."""
    return _STAFF_ONLY[(method, route)]
