"""The embedded store used when no MONGODB_URI is given (development, tests).

No method awaits while it reads or writes, so on one event loop each call is atomic. It keeps
what the MongoDB store keeps, as that one reads it back (times to the millisecond).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from petstore_webhook.storage.base import (
    ATTEMPTS_KEPT,
    MAX_ENDPOINTS,
    PENDING_WINDOW,
    Accepted,
    Attempt,
    Delivery,
    EndpointRecord,
    EndpointState,
    Event,
    Outcome,
    endpoint_not_found,
    endpoints_full,
    subject_heads,
)


@dataclass(slots=True)
class _Pending:
    delivery: Delivery
    accepted_at: datetime

    @property
    def due_at(self) -> datetime:
        return self.delivery.next_attempt_at or self.accepted_at


class MemoryWebhookStore:
    def __init__(self) -> None:
        self._endpoints: dict[int, EndpointRecord] = {}
        self._ids = itertools.count(1)
        self._pending: dict[int, dict[str, _Pending]] = {}
        """Endpoint id -> event id -> its pending delivery, in accepted order (dicts keep it)."""
        self._delivered: dict[int, dict[str, datetime]] = {}
        """Endpoint id -> event id -> when it was delivered (kept for DELIVERED_RETENTION)."""
        self._attempts: dict[int, deque[Attempt]] = {}
        """Endpoint id -> its newest attempts, newest last."""

    async def ensure_indexes(self) -> None:
        """Nothing to index: lookups are by key."""

    async def ping(self) -> None:
        """Always reachable."""

    async def create_endpoint(
        self, *, url: str, event_types: Sequence[str], secret: str, at: datetime
    ) -> EndpointRecord:
        if len(self._endpoints) >= MAX_ENDPOINTS:
            raise endpoints_full()
        endpoint = EndpointRecord(
            id=next(self._ids), url=url, event_types=tuple(event_types), secret=secret, created_at=_millis(at)
        )
        self._endpoints[endpoint.id] = endpoint
        self._pending[endpoint.id] = {}
        self._delivered[endpoint.id] = {}
        self._attempts[endpoint.id] = deque(maxlen=ATTEMPTS_KEPT)
        return endpoint

    async def list_endpoints(self) -> list[EndpointRecord]:
        return [self._endpoints[endpoint_id] for endpoint_id in sorted(self._endpoints)]

    async def get_endpoint(self, endpoint_id: int) -> EndpointRecord:
        try:
            return self._endpoints[endpoint_id]
        except KeyError:
            raise endpoint_not_found(endpoint_id) from None

    async def delete_endpoint(self, endpoint_id: int) -> None:
        if self._endpoints.pop(endpoint_id, None) is None:
            raise endpoint_not_found(endpoint_id)
        for kept in (self._pending, self._delivered, self._attempts):
            kept.pop(endpoint_id, None)

    async def disable_endpoint(self, endpoint_id: int, reason: str) -> None:
        endpoint = self._endpoints.get(endpoint_id)
        if endpoint is not None:
            self._endpoints[endpoint_id] = replace(
                endpoint, state=EndpointState.DISABLED, disabled_reason=reason
            )

    async def accept_events(self, events: Sequence[Event]) -> Accepted:
        now = datetime.now(UTC)
        enabled = [
            endpoint for endpoint in self._endpoints.values() if endpoint.state is EndpointState.ENABLED
        ]
        created = 0
        woken: set[int] = set()
        for event in events:
            kept = replace(event, time=_millis(event.time))
            for endpoint in enabled:
                if event.type not in endpoint.event_types:
                    continue
                pending = self._pending[endpoint.id]
                if event.id in pending or event.id in self._delivered[endpoint.id]:
                    continue
                pending[event.id] = _Pending(Delivery(endpoint.id, kept), _millis(now))
                created += 1
                woken.add(endpoint.id)
        return Accepted(deliveries=created, endpoint_ids=frozenset(woken))

    def _heads(self, endpoint_id: int) -> list[_Pending]:
        window = itertools.islice(self._pending.get(endpoint_id, {}).values(), PENDING_WINDOW)
        return subject_heads(window, lambda pending: pending.delivery.event.subject)

    async def due_deliveries(self, endpoint_id: int, *, now: datetime, limit: int) -> list[Delivery]:
        due = [pending.delivery for pending in self._heads(endpoint_id) if pending.due_at <= now]
        return due[:limit]

    async def next_due(self, endpoint_id: int) -> datetime | None:
        return min((pending.due_at for pending in self._heads(endpoint_id)), default=None)

    async def record_attempt(self, attempt: Attempt, *, next_attempt_at: datetime | None) -> None:
        pending = self._pending.get(attempt.endpoint_id, {})
        entry = pending.get(attempt.message_id)
        if entry is None:
            return  # its endpoint was deleted meanwhile (or it was delivered already)
        attempted_at = _millis(attempt.attempted_at)
        if attempt.outcome is Outcome.DELIVERED:
            del pending[attempt.message_id]
            self._delivered[attempt.endpoint_id][attempt.message_id] = attempted_at
        else:
            entry.delivery = replace(
                entry.delivery,
                attempts=attempt.attempt,
                next_attempt_at=None if next_attempt_at is None else _millis(next_attempt_at),
            )
        self._attempts[attempt.endpoint_id].append(replace(attempt, attempted_at=attempted_at))

    async def recent_attempts(self, endpoint_id: int, *, limit: int) -> list[Attempt]:
        await self.get_endpoint(endpoint_id)
        return list(itertools.islice(reversed(self._attempts[endpoint_id]), limit))

    async def purge(self, *, delivered_before: datetime) -> int:
        purged = 0
        for delivered in self._delivered.values():
            old = [event_id for event_id, at in delivered.items() if at < delivered_before]
            for event_id in old:
                del delivered[event_id]
            purged += len(old)
        return purged


def _millis(moment: datetime) -> datetime:
    """What MongoDB keeps of a time: UTC, whole milliseconds."""
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(microsecond=moment.microsecond // 1000 * 1000)
