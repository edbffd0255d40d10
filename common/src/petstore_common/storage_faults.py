"""Writes the database refuses for lack of storage (a full disk, a read-only volume), told
apart from a lost database.

When the database's disk fills, the database still answers: pings pass and reads work, only
writes fail. Taking the service out of rotation would turn a partial outage into a whole one,
so the service stays SERVING and says what is wrong instead:

- each refused write counts in `petstore_storage_write_failures_total{cause}`, and the call is
  UNAVAILABLE with words that say writes are refused (clients retry later);
- the first refusal of an outage is logged once at ERROR with the cause and the database's own
  message; the first write that succeeds after it is logged once at WARNING ("writes work
  again");
- `petstore_storage_writes_failing` is 1 for the outage (the shipped alert rule fires on it),
  and the service's health reports its `<service>/writes` name NOT_SERVING, which the
  gateway's /readyz names while it stays 200 for reads.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from prometheus_client import Counter, Gauge
from pymongo.errors import OperationFailure

log = logging.getLogger(__name__)

WRITES_REFUSED = "the database refuses writes right now; reads still work, retry later"

OUT_OF_DISK_SPACE = 14031
"""MongoDB's OutOfDiskSpace error code."""
_CAUSES = (
    # (cause, words of the database's message that give it away): MongoDB's own code is checked
    # first; FerretDB reports SQLite's and PostgreSQL's errors as InternalError with their text.
    ("disk full", ("disk is full", "no space left on device", "could not extend file", "disk_full")),
    ("read-only storage", ("readonly database", "read-only file system", "read-only transaction")),
)

FAILURES = Counter(
    "petstore_storage_write_failures_total",
    "Writes the database refused for lack of storage, by cause",
    ["cause"],
)
FAILING = Gauge(
    "petstore_storage_writes_failing",
    "1 while the database refuses this service's writes for lack of storage",
)


def storage_fault(exc: BaseException) -> str | None:
    """The cause ("disk full", "read-only storage") when `exc` is a write refused for lack of
    storage, else None."""
    if not isinstance(exc, OperationFailure):
        return None
    if exc.code == OUT_OF_DISK_SPACE:
        return "disk full"
    text = str(exc).lower()
    for cause, words in _CAUSES:
        if any(word in text for word in words):
            return cause
    return None


class WriteHealth:
    """Whether the database refuses this service's writes: set by a refused write, cleared by
    the next write that succeeds. `on_change(failing)` reports it (the health name)."""

    def __init__(self, on_change: Callable[[bool], Awaitable[None]] | None = None) -> None:
        self._on_change = on_change
        self.failing: str | None = None
        """The cause of the current outage, or None."""

    async def refused(self, cause: str, error: BaseException, *, method: str) -> None:
        FAILURES.labels(cause).inc()
        if self.failing is not None:
            return
        self.failing = cause
        FAILING.set(1)
        log.error(
            "database refuses writes",
            extra={"cause": cause, "grpc_method": method, "database_error": str(error)[:300]},
        )
        if self._on_change is not None:
            await self._on_change(True)

    async def written(self) -> None:
        if self.failing is None:
            return
        log.warning("database takes writes again", extra={"cause_was": self.failing})
        self.failing = None
        FAILING.set(0)
        if self._on_change is not None:
            await self._on_change(False)
