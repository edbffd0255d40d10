"""Rate limits: a token bucket per client, and per address for logins and for sign-ups.

Each gateway process keeps its own buckets: N replicas (or GATEWAY_WORKERS) let a client spend
up to N budgets. Failed logins are also counted per account by the user service, which every
gateway shares (a wait that grows with each wrong password): that limit is global.

Each bucket is one number, the generic cell rate algorithm's "theoretical arrival time" (a
token bucket seen from the clock): a request is admitted when the bucket would not overflow,
and the exact wait is known on refusal. pyrate-limiter, used before, does the same with an
object graph per bucket and a RateItem per request; it was the largest part of a cached read
of ours in the gateway's profile (bench/README.md). Around the buckets:

- keys are keyed BLAKE2b digests, never the raw user id, static key or address;
- a bucket idle long enough to have refilled completely is the same as a new one, so it is
  dropped (oldest first, a little on every call): memory follows the clients active lately;
- past `max_entries` the least recently used bucket is dropped even if not yet full, so
  memory stays bounded under any number of distinct clients (that client starts afresh).

Everything runs on the event loop without awaiting, so each check is atomic.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from petstore_gateway.errors import ApiError

MAX_ENTRIES = 10_000
"""Buckets kept per limit; about 0.2 KB each."""

Clock = Callable[[], int]
"""Milliseconds from an arbitrary start (monotonic)."""

SECOND_MS = 1_000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class Rate:
    """`limit` requests per `interval_ms`, up to `burst` of them at once (0: `limit`)."""

    limit: int
    interval_ms: int
    burst: int = 0

    @property
    def capacity(self) -> int:
        return self.burst or self.limit


@dataclass(slots=True)
class _Entry:
    full_at_ms: float
    """When the bucket is full again (the algorithm's theoretical arrival time)."""
    last_seen_ms: int


class KeyedLimiter:
    """One token bucket per key: `rate.capacity` tokens, refilled at `rate.limit` per
    `rate.interval_ms`. `name` says which limit it is in the access log of a 429."""

    def __init__(
        self, rate: Rate, *, name: str = "", max_entries: int = MAX_ENTRIES, clock: Clock = monotonic_ms
    ) -> None:
        self.name = name
        self._max_entries = max_entries
        self._clock = clock
        self._per_token_ms = rate.interval_ms / rate.limit
        # A request is admitted when the bucket, with its token taken, is not over capacity.
        self._capacity_ms = rate.capacity * self._per_token_ms
        # After this long without a request a bucket is full again: forgetting it changes nothing.
        self._refill_ms = math.ceil(self._capacity_ms)
        self._salt = os.urandom(16)
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def _digest(self, key: str) -> bytes:
        return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16, key=self._salt).digest()

    def acquire(self, key: str) -> int | None:
        """Spend one token of `key`'s bucket: None when admitted, else the seconds to wait (>= 1)."""
        now = self._clock()
        self._forget_idle(now)
        digest = self._digest(key)
        entry = self._entries.get(digest)
        if entry is None:
            entry = _Entry(now, now)
            self._entries[digest] = entry
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(digest)
            entry.last_seen_ms = now
        taken = max(entry.full_at_ms, now) + self._per_token_ms
        overflow_ms = taken - now - self._capacity_ms
        if overflow_ms > 0:
            return max(1, math.ceil(overflow_ms / 1000))
        entry.full_at_ms = taken
        return None

    def _forget_idle(self, now: int) -> None:
        while self._entries:
            oldest = next(iter(self._entries.values()))
            if now - oldest.last_seen_ms < self._refill_ms:
                return
            self._entries.popitem(last=False)


def client_limiter(
    per_second: int, burst: int, *, max_entries: int = MAX_ENTRIES, clock: Clock = monotonic_ms
) -> KeyedLimiter | None:
    """RATE_LIMIT_PER_SECOND / RATE_LIMIT_BURST; None when the rate is 0 (off)."""
    if per_second <= 0:
        return None
    return KeyedLimiter(
        Rate(per_second, SECOND_MS, burst=burst),
        name="client-per-second",
        max_entries=max_entries,
        clock=clock,
    )


def login_limiter(
    per_minute: int, *, max_entries: int = MAX_ENTRIES, clock: Clock = monotonic_ms
) -> KeyedLimiter | None:
    """LOGIN_RATE_LIMIT_PER_MINUTE per address, all of it usable at once; None when 0 (off)."""
    if per_minute <= 0:
        return None
    return KeyedLimiter(
        Rate(per_minute, MINUTE_MS), name="login-per-minute", max_entries=max_entries, clock=clock
    )


def signup_limiter(
    per_hour: int, *, max_entries: int = MAX_ENTRIES, clock: Clock = monotonic_ms
) -> KeyedLimiter | None:
    """SIGNUP_RATE_LIMIT_PER_HOUR per address, all of it usable at once; None when 0 (off)."""
    if per_hour <= 0:
        return None
    return KeyedLimiter(Rate(per_hour, HOUR_MS), name="signup-per-hour", max_entries=max_entries, clock=clock)


@dataclass(frozen=True, slots=True)
class RateLimits:
    """The gateway's limits; a None limiter is switched off."""

    clients: KeyedLimiter | None
    logins: KeyedLimiter | None
    client_per_second: int = 0
    login_per_minute: int = 0
    signups: KeyedLimiter | None = None

    @classmethod
    def create(
        cls,
        *,
        per_second: int,
        burst: int,
        login_per_minute: int,
        signup_per_hour: int = 0,
        clock: Clock = monotonic_ms,
    ) -> RateLimits:
        return cls(
            clients=client_limiter(per_second, burst, clock=clock),
            logins=login_limiter(login_per_minute, clock=clock),
            signups=signup_limiter(signup_per_hour, clock=clock),
            client_per_second=max(per_second, 0),
            login_per_minute=max(login_per_minute, 0),
        )

    def login_allowance_per_hour(self) -> int | None:
        """Logins per hour one user may make (login's X-Rate-Limit); None when nothing limits them."""
        allowances = [
            per_hour
            for per_hour, limiter in (
                (self.login_per_minute * 60, self.logins),
                (self.client_per_second * 3600, self.clients),
            )
            if limiter is not None
        ]
        return min(allowances) if allowances else None


class RateLimited(ApiError):
    """A 429 of one of the gateway's limits; `limit` (the limiter's name) is logged, not sent."""

    def __init__(self, message: str, *, retry_after: int, limit: str) -> None:
        super().__init__(429, message, headers={"Retry-After": str(retry_after)})
        self.limit = limit


def too_many(retry_after: int, what: str, *, limit: str) -> RateLimited:
    """429 with Retry-After in whole seconds and the ApiResponse error body; `limit` names the
    limit that refused (a KeyedLimiter's name) in the access log."""
    return RateLimited(f"too many {what}; retry after {retry_after} s", retry_after=retry_after, limit=limit)
