"""The handlers of the API, one module per resource, each ending with the declarations of its
operations (operations.Operation)."""

from __future__ import annotations

from petstore_gateway.operations import Operation
from petstore_gateway.routes import pet, store, user, webhook

OPERATIONS: tuple[Operation, ...] = (
    *pet.OPERATIONS,
    *store.OPERATIONS,
    *user.OPERATIONS,
    *webhook.OPERATIONS,
)
"""Every operation of the API, in the order the description lists them."""
