"""Taking events in: read a page from each service's outbox, keep it as deliveries, and only
then acknowledge it, so the service forgets nothing the store does not hold.

A crash between keeping and acknowledging re-reads the same events: the store already has a
delivery of each (keyed by endpoint and event id) and adds none. A crash before keeping loses
nothing: the service still holds them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence

from petstore_webhook.sources import EventSource, SourceUnavailable
from petstore_webhook.storage.base import WebhookStore

log = logging.getLogger(__name__)

MAX_PAGES_PER_PASS = 100
"""Pages one source gives in one pass at most: a pass ends, and the others get their turn,
even while a source always has a full page."""
MAX_ERROR_WAIT_SECONDS = 60.0
"""The longest wait after failed passes (the wait doubles from the poll interval)."""

Wake = Callable[[Iterable[int]], None]
"""Told the endpoints that got new deliveries."""


class Intake:
    def __init__(
        self,
        store: WebhookStore,
        sources: Sequence[EventSource],
        *,
        poll_seconds: float,
        wake: Wake = lambda _endpoint_ids: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._sources = tuple(sources)
        self._poll_seconds = poll_seconds
        self._wake = wake
        self._clock = clock
        self._failures = [0] * len(self._sources)
        """Passes in a row each source failed: it is backed off alone, the others go on."""
        self._next_try = [0.0] * len(self._sources)

    async def take_from(self, source: EventSource) -> bool:
        """Keep then acknowledge the source's pages while they are full; True when the last one
        was full (more may wait). Raises what the source or store raised: nothing read after
        the failure is acknowledged."""
        for _ in range(MAX_PAGES_PER_PASS):
            page = await source.read()
            if page.events:
                accepted = await self._store.accept_events(page.events)
                if accepted.endpoint_ids:
                    self._wake(accepted.endpoint_ids)
            await source.acknowledge(page)  # only once the store holds the page's deliveries
            if not page.full:
                return False
        return True

    async def run_pass(self) -> tuple[bool, bool]:
        """One pass over every source not backed off: (whether one still had full pages,
        whether one failed)."""
        more = failed = False
        for index, source in enumerate(self._sources):
            if self._clock() < self._next_try[index]:
                continue
            try:
                more |= await self.take_from(source)
            except SourceUnavailable as exc:
                log.warning("webhook intake: %s; trying again later", exc)
            except Exception:
                log.exception("webhook intake from the %s service failed; trying again later", source.name)
            else:
                self._failures[index] = 0
                continue
            failed = True
            self._failures[index] += 1
            self._next_try[index] = self._clock() + self.wait_seconds(self._failures[index])
        return more, failed

    async def run_forever(self) -> None:
        while True:
            more, _ = await self.run_pass()
            # A backlog is read on at once (the other sources had their turn in the pass).
            await asyncio.sleep(0 if more else self._poll_seconds)

    def wait_seconds(self, failures: int) -> float:
        """How long a source waits after `failures` passes in a row failed: the poll interval,
        doubled for each, up to a bound."""
        backoff = self._poll_seconds * 2.0 ** min(failures, 32)
        return min(backoff, max(MAX_ERROR_WAIT_SECONDS, self._poll_seconds))
