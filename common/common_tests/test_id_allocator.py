"""IdAllocator without a database: callers share one counter draw, and fail together."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pymongo.errors import ServerSelectionTimeoutError

from petstore_common.mongo import IdAllocator


class SlowCounters:
    """Stands in for the counters collection: each draw takes `delay` seconds, or fails."""

    def __init__(self, delay: float, *, fail: bool = False) -> None:
        self.delay = delay
        self.fail = fail
        self.value = 0
        self.draws = 0

    async def find_one_and_update(self, query: Any, update: Any, **options: Any) -> dict[str, int]:
        self.draws += 1
        await asyncio.sleep(self.delay)
        if self.fail:
            raise ServerSelectionTimeoutError("no servers")
        self.value += update["$inc"]["value"]
        return {"value": self.value}


async def test_concurrent_callers_share_draws_and_get_distinct_ids() -> None:
    counters = SlowCounters(0.01)
    ids = IdAllocator(counters, "things", block_size=8)  # type: ignore[arg-type]
    drawn = await asyncio.gather(*(ids.next() for _ in range(20)))
    assert sorted(drawn) == list(range(1, 21))
    assert counters.draws == 3  # ceil(20 / 8): one draw per block, not one per caller


async def test_with_the_database_gone_every_caller_fails_at_once() -> None:
    counters = SlowCounters(0.2, fail=True)
    ids = IdAllocator(counters, "things")  # type: ignore[arg-type]
    started = time.monotonic()
    results = await asyncio.gather(*(ids.next() for _ in range(10)), return_exceptions=True)
    assert all(isinstance(result, ServerSelectionTimeoutError) for result in results)
    assert time.monotonic() - started < 1.0  # one shared timeout, not ten queued ones
    assert counters.draws == 1


async def test_a_caller_given_up_on_does_not_lose_the_block() -> None:
    counters = SlowCounters(0.05)
    ids = IdAllocator(counters, "things", block_size=4)  # type: ignore[arg-type]
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ids.next(), timeout=0.01)
    assert [await ids.next() for _ in range(4)] == [1, 2, 3, 4]
    assert counters.draws == 1
