"""The database's reachability as the driver's own server monitoring sees it.

The driver checks every server it knows with a heartbeat (`hello`) every HEARTBEAT_SECONDS on a
connection of its own. A killed database fails the next heartbeat at once (the connection is
refused or reset), well before a ping on the service's own schedule or a call's server
selection timeout would say so. `DatabaseEvents` is the listener a client is made with
(petstore_common.mongo.create_client); the service's readiness subscribes to it and turns
NOT_SERVING at the first failed heartbeat, then checks again as usual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pymongo.monitoring import (
    ServerHeartbeatFailedEvent,
    ServerHeartbeatListener,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)

HEARTBEAT_SECONDS = 0.5
"""The driver's heartbeat interval (heartbeatFrequencyMS; 0.5 s is the least it allows)."""


class DatabaseEvents(ServerHeartbeatListener):
    """Tells its subscribers, on their event loop, each time a heartbeat fails (False) and the
    first time one succeeds after that (True)."""

    def __init__(self) -> None:
        self._subscribers: list[tuple[asyncio.AbstractEventLoop, Callable[[bool], None]]] = []
        self._failing = False

    def subscribe(self, callback: Callable[[bool], None]) -> None:
        """`callback(reachable)` runs on the calling event loop."""
        self._subscribers.append((asyncio.get_running_loop(), callback))

    def started(self, event: ServerHeartbeatStartedEvent) -> None:
        """Nothing to tell."""

    def succeeded(self, event: ServerHeartbeatSucceededEvent) -> None:
        if self._failing:
            self._failing = False
            self._tell(True)

    def failed(self, event: ServerHeartbeatFailedEvent) -> None:
        self._failing = True
        self._tell(False)

    def _tell(self, reachable: bool) -> None:
        # The driver may publish from a thread of its own: each callback runs on its own loop.
        for loop, callback in self._subscribers:
            if not loop.is_closed():
                loop.call_soon_threadsafe(callback, reachable)
