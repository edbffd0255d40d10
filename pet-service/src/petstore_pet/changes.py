"""The stream of committed pet changes that keeps the gateways' caches coherent.

A `ChangeHub` fans changes out to its subscribers (the WatchPets streams), each in commit
order through its own bounded queue. A subscriber that falls behind, like a feed that breaks,
is *lost*: its stream ends, and the gateway behind it forgets its cache. Losing a subscriber is
always safe; silently skipping a change never is.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from petstore_common.errors import FailedPrecondition, Unavailable

MAX_PENDING_CHANGES = 10_000
"""Changes a subscriber may have queued; one more and it is lost (it reconnects afresh)."""


@dataclass(frozen=True, slots=True)
class PetChange:
    """One committed change: the pet's version after it (0: unknown), or its deletion."""

    pet_id: int
    version: int
    deleted: bool = False


class ChangesUnsupported(FailedPrecondition):
    """The database cannot stream its changes (e.g. FerretDB: no change streams)."""


class SubscriptionLost(Unavailable):
    """The subscriber may have missed a change: its stream must end."""


class Subscription:
    """The changes committed since it was opened, in commit order, until it is lost."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._queue: deque[PetChange] = deque()
        self._ready = asyncio.Event()
        self._lost: str | None = None

    def push(self, change: PetChange) -> None:
        if self._lost is not None:
            return
        if len(self._queue) >= self._limit:
            self.lose("the watcher fell behind")
            return
        self._queue.append(change)
        self._ready.set()

    def lose(self, reason: str) -> None:
        if self._lost is None:
            self._lost = reason
        self._ready.set()

    async def next_batch(self, wait_seconds: float) -> list[PetChange]:
        """Every change queued so far (waiting at most `wait_seconds`: [] means none came);
        SubscriptionLost once lost, even with changes still queued."""
        if not self._queue and self._lost is None:
            try:
                await asyncio.wait_for(self._ready.wait(), wait_seconds)
            except TimeoutError:
                return []
        if self._lost is not None:
            raise SubscriptionLost(f"change stream lost: {self._lost}")
        batch = list(self._queue)
        self._queue.clear()
        self._ready.clear()
        return batch


class ChangeHub:
    """Subscribers and the changes published to them; the embedded store publishes its own writes."""

    def __init__(self, *, limit: int = MAX_PENDING_CHANGES) -> None:
        self._limit = limit
        self._subscribers: set[Subscription] = set()
        self._closed = False

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def publish(self, change: PetChange) -> None:
        for subscriber in self._subscribers:
            subscriber.push(change)

    def lose_all(self, reason: str) -> None:
        for subscriber in self._subscribers:
            subscriber.lose(reason)

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription]:
        """Registered before it is yielded: every change published after this point reaches it."""
        if self._closed:
            raise Unavailable("the pet service is stopping")
        subscription = Subscription(self._limit)
        self._subscribers.add(subscription)
        try:
            yield subscription
        finally:
            self._subscribers.discard(subscription)

    async def close(self) -> None:
        """Stopping: end every stream now (a long-lived stream would hold the shutdown's grace)."""
        self._closed = True
        self.lose_all("the pet service is stopping")


class ChangeFeed(Protocol):
    """Where a store's committed changes come from."""

    def subscribe(self) -> AbstractAsyncContextManager[Subscription]:
        """A subscription that receives every change committed after it is entered;
        ChangesUnsupported when the database cannot stream changes, Unavailable when it cannot
        be reached or the service is stopping."""

    async def close(self) -> None:
        """End every subscription (the service is stopping)."""
