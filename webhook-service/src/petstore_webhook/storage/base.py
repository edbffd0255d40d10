"""The storage contract both webhook stores fulfil (memory for tests and `make run`, MongoDB).

The service keeps no copy of the events themselves: an event read from the service that owns
it becomes one *delivery* per endpoint that asked for its type, keyed by (endpoint, event id),
so reading an event again (its acknowledgement was lost in a crash) adds nothing. A delivery is
pending until the endpoint answers 2xx; delivered ones are kept for DELIVERED_RETENTION so a
late re-read still finds them, then purged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from petstore_common.errors import NotFound, ResourceExhausted

MAX_ENDPOINTS = 100
"""Endpoints the service holds at most: each costs a delivery per event of its types."""
ATTEMPTS_KEPT = 100
"""Attempts kept per endpoint, newest (what ListDeliveries can show)."""
DELIVERED_RETENTION = timedelta(days=1)
"""How long a delivered delivery is kept: an event re-read within it is not sent again."""
PENDING_WINDOW = 1000
"""Pending deliveries of one endpoint that due_deliveries and next_due look at, oldest first, to
find each subject's earliest: a bounded read however far behind the endpoint is (a subject
whose first pending delivery lies beyond it waits until the ones before it are delivered)."""
ENDPOINTS_FULL_RETRY_AFTER_SECONDS = 60
"""The retry-after of a CreateEndpoint refused for MAX_ENDPOINTS: one must be deleted first."""


class EndpointState(StrEnum):
    ENABLED = "enabled"
    DISABLED = "disabled"


@dataclass(frozen=True, slots=True)
class EndpointRecord:
    id: int
    url: str
    event_types: tuple[str, ...]
    secret: str
    """The Standard Webhooks signing secret ("whsec_..."): stored, shown to staff only once."""
    created_at: datetime
    state: EndpointState = EndpointState.ENABLED
    disabled_reason: str = ""


@dataclass(frozen=True, slots=True)
class Event:
    """One event as read from the service that owns it, ready to send."""

    id: str
    """Unique forever: the delivery's webhook-id."""
    type: str
    """"order.placed", "pet.sold"...: what endpoints subscribe to."""
    subject: str
    """Whose event it is ("order:12", "pet:7"): deliveries keep each subject's order."""
    sequence: int
    """Its place among its subject's events (1, 2, ...)."""
    time: datetime
    data: Mapping[str, Any]
    """The order or pet as the HTTP API shows it (JSON-ready)."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event on its way to one endpoint."""

    endpoint_id: int
    event: Event
    attempts: int = 0
    """Attempts made so far."""
    next_attempt_at: datetime | None = None
    """When it may be tried next; None: at once."""


class Outcome(StrEnum):
    DELIVERED = "delivered"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try of a delivery, as ListDeliveries shows it."""

    endpoint_id: int
    message_id: str
    event_type: str
    attempt: int
    attempted_at: datetime
    outcome: Outcome
    response_status: int = 0
    error: str = ""


@dataclass(frozen=True, slots=True)
class Accepted:
    """What accept_events did."""

    deliveries: int = 0
    """New deliveries created (an event already taken adds none)."""
    endpoint_ids: frozenset[int] = field(default_factory=frozenset)
    """Endpoints that got new deliveries (their workers are woken)."""


class WebhookStore(Protocol):
    """Endpoints and their deliveries. Methods raise petstore_common.errors.NotFound (an absent
    endpoint) and ResourceExhausted (MAX_ENDPOINTS) with client-safe messages."""

    async def ensure_indexes(self) -> None:
        """Create the indexes the queries need (idempotent)."""

    async def ping(self) -> None:
        """Raise when the store cannot be reached."""

    async def create_endpoint(
        self, *, url: str, event_types: Sequence[str], secret: str, at: datetime
    ) -> EndpointRecord:
        """Store a new, enabled endpoint under a fresh id; ResourceExhausted past MAX_ENDPOINTS."""

    async def list_endpoints(self) -> list[EndpointRecord]:
        """Every endpoint, by id."""

    async def get_endpoint(self, endpoint_id: int) -> EndpointRecord:
        """NotFound when absent."""

    async def delete_endpoint(self, endpoint_id: int) -> None:
        """Remove it with its deliveries and attempts; NotFound when absent."""

    async def disable_endpoint(self, endpoint_id: int, reason: str) -> None:
        """Stop deliveries to it (kept pending), saying why; nothing when absent."""

    async def accept_events(self, events: Sequence[Event]) -> Accepted:
        """A pending delivery of each event for every enabled endpoint that asked for its type,
        unless that endpoint already has a delivery of that event id (idempotent). `events` come
        in each subject's order; deliveries keep it."""

    async def due_deliveries(self, endpoint_id: int, *, now: datetime, limit: int) -> list[Delivery]:
        """Pending deliveries of the endpoint that may be tried now, at most `limit`: for each
        subject only its earliest pending one (a later event never overtakes it), and only when
        its next attempt is due; oldest first."""

    async def next_due(self, endpoint_id: int) -> datetime | None:
        """When the endpoint's earliest pending delivery is due (None: nothing pending): among
        each subject's earliest pending one only, as due_deliveries sees them (a later event
        waiting behind a retry is not "due at once"); a new delivery is due when accepted."""

    async def record_attempt(self, attempt: Attempt, *, next_attempt_at: datetime | None) -> None:
        """Keep the attempt (the newest ATTEMPTS_KEPT per endpoint) and update its delivery:
        delivered when `attempt.outcome` is DELIVERED, else pending until `next_attempt_at`."""

    async def recent_attempts(self, endpoint_id: int, *, limit: int) -> list[Attempt]:
        """The endpoint's newest attempts, newest first; NotFound when the endpoint is absent."""

    async def purge(self, *, delivered_before: datetime) -> int:
        """Forget deliveries delivered before the given time; how many."""


def endpoint_not_found(endpoint_id: int) -> NotFound:
    return NotFound(f"endpoint {endpoint_id} not found")


def endpoints_full() -> ResourceExhausted:
    return ResourceExhausted(
        f"the service holds at most {MAX_ENDPOINTS} endpoints: delete one first",
        retry_after_seconds=ENDPOINTS_FULL_RETRY_AFTER_SECONDS,
    )


T = TypeVar("T")


def subject_heads(pending: Iterable[T], subject_of: Callable[[T], str]) -> list[T]:
    """The first of each subject's pending deliveries, given oldest first (accepted order): a
    subject's events are accepted in its order, so its first is its earliest, and only that one
    may be tried (a later event never overtakes it). Accepted order, not the sequence, decides:
    an order deleted and created again under its id starts its sequence anew."""
    seen: set[str] = set()
    heads = []
    for item in pending:
        subject = subject_of(item)
        if subject not in seen:
            seen.add(subject)
            heads.append(item)
    return heads
