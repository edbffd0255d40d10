"""Which operations need a credential. This is authentication only: whether the caller may do
what it asks is decided by the service that owns the resource, from the Caller it receives."""

from __future__ import annotations

from enum import Enum


class Access(Enum):
    OPEN = "open"
    """The credential is not read: everybody is served alike (the catalogue, login, logout)."""
    OPTIONAL = "optional"
    """Anonymous without a credential; a credential that is sent must be valid (401 if not)."""
    REQUIRED = "required"
    """401 without a valid credential."""


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


def access_of(method: str, route: str) -> Access:
    """Reads are open and writes need a credential, but for the routes named above."""
    return _ROUTES.get((method, route)) or (Access.OPEN if method in _READS else Access.REQUIRED)
