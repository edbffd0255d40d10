"""The stream of committed pet changes that keeps the gateways' caches coherent.

A `ChangeHub` fans changes out to its subscribers (the WatchPets streams), each in commit
order through its own bounded queue. A subscriber that falls behind, like a feed that breaks,
is *lost*: its stream ends, and the gateway behind it forgets its cache. Losing a subscriber is
always safe; silently skipping a change never is.

Every change gets a sequence number within the hub's *epoch*, and the hub keeps the latest
ones: a watcher whose stream broke (a connection aged out, a network blip) asks to resume
after the last sequence it applied, and gets every change since instead of forgetting its
cache. An epoch is one unbroken feed: another process, or a feed that may have missed
changes, is a new epoch, and a watcher from an old one starts afresh.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from petstore_common.errors import FailedPrecondition, Unavailable

MAX_PENDING_CHANGES = 10_000
"""Changes a subscriber may have queued; one more and it is lost (it reconnects afresh)."""
RETAINED_CHANGES = 10_000
"""The latest changes a hub keeps for watchers that resume (a few hundred kilobytes)."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where in a feed a watcher stands: after change `sequence` of `epoch`."""

    epoch: str
    sequence: int


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
    """The changes committed since it was opened (or since the position it resumed from), in
    commit order, until it is lost."""

    def __init__(self, limit: int, position: Position, *, resumed: bool = False) -> None:
        self._limit = limit
        self._queue: deque[tuple[int, PetChange]] = deque()
        self._ready = asyncio.Event()
        self._lost: str | None = None
        self.epoch = position.epoch
        self.sequence = position.sequence
        """The sequence of the last change handed out (or of the position it started at)."""
        self.resumed = resumed
        """It started at the position the watcher asked for: no change since was missed."""

    def push(self, sequence: int, change: PetChange) -> None:
        if self._lost is not None:
            return
        if len(self._queue) >= self._limit:
            self.lose("the watcher fell behind")
            return
        self._queue.append((sequence, change))
        self._ready.set()

    def lose(self, reason: str) -> None:
        if self._lost is None:
            self._lost = reason
        self._ready.set()

    def drain(self) -> list[PetChange]:
        """Every change queued so far, without waiting (the changes a resumed stream replays)."""
        if self._lost is not None:
            raise SubscriptionLost(f"change stream lost: {self._lost}")
        batch = [change for _, change in self._queue]
        if self._queue:
            self.sequence = self._queue[-1][0]
        self._queue.clear()
        self._ready.clear()
        return batch

    async def next_batch(self, wait_seconds: float) -> list[PetChange]:
        """Every change queued so far (waiting at most `wait_seconds`: [] means none came);
        SubscriptionLost once lost, even with changes still queued."""
        if not self._queue and self._lost is None:
            try:  # asyncio.timeout: wait_for can drop a cancellation on 3.11 (cpython#86296)
                async with asyncio.timeout(wait_seconds):
                    await self._ready.wait()
            except TimeoutError:
                return []
        return self.drain()


class ChangeHub:
    """Subscribers and the changes published to them; the embedded store publishes its own writes."""

    def __init__(self, *, limit: int = MAX_PENDING_CHANGES, retained: int = RETAINED_CHANGES) -> None:
        self._limit = limit
        self._subscribers: set[Subscription] = set()
        self._closed = False
        self._recent: deque[tuple[int, PetChange]] = deque(maxlen=retained)
        self._epoch = secrets.token_hex(8)
        self._sequence = 0

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    @property
    def position(self) -> Position:
        """After the last change published."""
        return Position(self._epoch, self._sequence)

    def publish(self, change: PetChange) -> None:
        self._sequence += 1
        self._recent.append((self._sequence, change))
        for subscriber in self._subscribers:
            subscriber.push(self._sequence, change)

    def new_epoch(self) -> None:
        """The feed may have missed changes (its source restarted): nobody resumes across this."""
        self._epoch = secrets.token_hex(8)
        self._sequence = 0
        self._recent.clear()

    def lose_all(self, reason: str) -> None:
        for subscriber in self._subscribers:
            subscriber.lose(reason)

    def _replay_after(self, resume: Position | None) -> list[tuple[int, PetChange]] | None:
        """The changes after `resume`, or None when they are not all here (another epoch, or
        older than what is kept)."""
        if resume is None or resume.epoch != self._epoch or not 0 <= resume.sequence <= self._sequence:
            return None
        oldest = self._recent[0][0] if self._recent else self._sequence + 1
        if resume.sequence < oldest - 1:
            return None  # some of the changes after it are no longer kept
        return [(sequence, change) for sequence, change in self._recent if sequence > resume.sequence]

    @asynccontextmanager
    async def subscribe(self, resume: Position | None = None) -> AsyncIterator[Subscription]:
        """Registered before it is yielded: every change published after this point reaches it;
        with `resume`, the kept changes after it come first when they are all kept."""
        if self._closed:
            raise Unavailable("the pet service is stopping")
        replay = self._replay_after(resume)
        if replay is None:
            subscription = Subscription(self._limit, self.position)
        else:
            assert resume is not None
            subscription = Subscription(self._limit, resume, resumed=True)
            for sequence, change in replay:
                subscription.push(sequence, change)
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

    def subscribe(self, resume: Position | None = None) -> AbstractAsyncContextManager[Subscription]:
        """A subscription that receives every change committed after it is entered (after
        `resume`, when the feed can resume there: `resumed` says whether it did);
        ChangesUnsupported when the database cannot stream changes, Unavailable when it cannot
        be reached or the service is stopping."""

    async def close(self) -> None:
        """End every subscription (the service is stopping)."""
