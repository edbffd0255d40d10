"""The driver's heartbeats reach a subscriber on its own loop: every failure, and the first
success after one."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from petstore_common.database_events import DatabaseEvents


async def test_failures_and_the_first_success_after_them_are_told() -> None:
    events = DatabaseEvents()
    heard: list[bool] = []
    events.subscribe(heard.append)
    event: Any = None  # the listener reads nothing of the driver's event

    events.succeeded(event)  # nothing failed: nothing to tell

    # The driver may publish from a thread of its own.
    def fail_twice() -> None:
        events.failed(event)
        events.failed(event)

    publisher = threading.Thread(target=fail_twice)
    publisher.start()
    publisher.join()
    events.succeeded(event)
    events.succeeded(event)
    await asyncio.sleep(0.05)

    assert heard == [False, False, True]
