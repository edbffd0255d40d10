"""The request-body bytes the gateway holds at once, across all connections, and who may hold them.

A JSON or XML body holds the bytes that have arrived, as they arrive (`holding`): a client that
sends one byte a second holds one byte a second, and one that stalls holds what it sent until
the body deadline (connections.py: body timeout + length / MIN_BODY_BYTES_PER_SECOND) cuts it.
A body that no longer fits is refused there and then, 503 with Retry-After: nothing was done,
so the client may send it again. A form (the staff's pet forms and uploads, read by aiohttp in
one go) reserves its declared Content-Length before it is read (`reserve`). Either way the
budget is shared out, so that nobody holding bodies open can lock the others out:

- anonymous callers, all together, hold at most ANONYMOUS_SHARE of the budget; customers and
  anonymous callers together at most CUSTOMER_SHARE: the rest is always there for staff, whose
  writes (stock, orders' fulfilment) go on whoever sends bodies at the shop;
- one client address (anonymous or customer) holds at most ADDRESS_SHARE of the budget (never
  less than one body of the largest size): one address cannot take a tier's whole share.
  Staff (a static key) is not held to it: a back office behind one NAT address is one address.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from enum import Enum

from petstore_gateway.errors import UNAVAILABLE_RETRY_AFTER, ApiError

ANONYMOUS_SHARE = 0.5
CUSTOMER_SHARE = 0.75
ADDRESS_SHARE = 0.125
"""With the default 16 MiB budget: 8 MiB for anonymous bodies, 12 MiB for anonymous and
customer bodies, 2 MiB (two bodies of the largest size) per address."""


class Tier(Enum):
    """How much of the budget a caller's bodies may use: the share of the whole that its tier
    and the tiers below it hold together (an anonymous body must fit the customers' share too)."""

    ANONYMOUS = ANONYMOUS_SHARE
    CUSTOMER = CUSTOMER_SHARE
    STAFF = 1.0


def _refused(message: str) -> ApiError:
    return ApiError(503, message, headers={"Retry-After": UNAVAILABLE_RETRY_AFTER})


class BodyBudget:
    """Request-body bytes held at once, in all and per tier and per client address."""

    def __init__(self, max_bytes: int, max_body_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_body_bytes = max_body_bytes
        self.address_bytes = max(max_body_bytes, int(max_bytes * ADDRESS_SHARE))
        self.held = 0
        """Bytes held by every body."""
        self.held_below_staff = 0
        """Bytes held by anonymous and customer bodies."""
        self.held_anonymous = 0
        self.held_by_address: dict[str, int] = {}

    def amount(self, content_length: int | None) -> int:
        """What a body of this Content-Length reserves (a chunked one: the most a body may be)."""
        return self.max_body_bytes if content_length is None else min(content_length, self.max_body_bytes)

    @contextlib.contextmanager
    def reserve(self, content_length: int | None, *, tier: Tier, address: str) -> Iterator[None]:
        """Hold a body's declared length (a chunked one's: the most a body may be) while it is read."""
        with self.holding(tier=tier, address=address) as hold:
            hold(self.amount(content_length))
            yield

    @contextlib.contextmanager
    def holding(self, *, tier: Tier, address: str) -> Iterator[Callable[[int], None]]:
        """A body's holding: `hold(n)` takes n more bytes (ApiError 503 when they do not fit);
        everything it took is given back at the end."""
        held = 0

        def hold(amount: int) -> None:
            nonlocal held
            self._check(amount, tier, address)
            self._add(amount, tier, address)
            held += amount

        try:
            yield hold
        finally:
            if held:
                self._add(-held, tier, address)

    def _check(self, amount: int, tier: Tier, address: str) -> None:
        if tier is not Tier.STAFF:
            if self.held_by_address.get(address, 0) + amount > self.address_bytes:
                raise _refused("this address is sending too many request bodies at once; retry shortly")
            over_anonymous = tier is Tier.ANONYMOUS and (
                self.held_anonymous + amount > self.max_bytes * Tier.ANONYMOUS.value
            )
            if over_anonymous or self.held_below_staff + amount > self.max_bytes * Tier.CUSTOMER.value:
                raise _refused("the gateway is reading too many request bodies; retry shortly")
        if self.held + amount > self.max_bytes:
            raise _refused("the gateway is reading too many request bodies; retry shortly")

    def _add(self, amount: int, tier: Tier, address: str) -> None:
        self.held += amount
        if tier is Tier.STAFF:
            return
        self.held_below_staff += amount
        if tier is Tier.ANONYMOUS:
            self.held_anonymous += amount
        by_address = self.held_by_address.get(address, 0) + amount
        if by_address:
            self.held_by_address[address] = by_address
        else:
            del self.held_by_address[address]
