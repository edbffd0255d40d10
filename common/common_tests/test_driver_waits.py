"""PyMongo's condition waits under a cancellation that lands as a wait's own timeout fires.

This drives PyMongo's own condition and wait helper (`pymongo.lock`), the code its pool and
server selection wait through, in the order that wedged a service about once in fifty
database restarts: the wait times out and takes its lock back while another task holds it,
and the waiter is cancelled (a gRPC deadline) just then."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pymongo.lock
import pytest
from pymongo.lock import _async_cond_wait, _async_create_condition, _async_create_lock

from petstore_common import driver_waits

WaitFor = Callable[[Awaitable[Any], float | None], Awaitable[Any]]


async def free_after_a_cancelled_timeout(monkeypatch: pytest.MonkeyPatch, wait_for: WaitFor) -> bool:
    """Whether the condition's lock is free again after the race (False: wedged for good)."""
    monkeypatch.setattr(pymongo.lock, "wait_for", wait_for)
    condition = _async_create_condition(_async_create_lock())

    async def waiter() -> None:
        async with condition:
            await _async_cond_wait(condition, 0.05)

    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0.01)  # it waits, the lock given up meanwhile
    await condition.acquire()  # another request takes the lock
    await asyncio.sleep(0.1)  # the wait timed out and is taking its lock back
    waiting.cancel()  # the caller's deadline, just then
    await asyncio.sleep(0)
    # The other request is done; RuntimeError "Lock is not acquired": the waiter released it.
    with contextlib.suppress(RuntimeError):
        condition.release()
    await asyncio.wait({waiting}, timeout=1)
    try:
        async with asyncio.timeout(0.5):
            await condition.acquire()
    except TimeoutError:
        return False
    condition.release()
    return True


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12's wait_for has no such race")
async def test_the_race_wedges_pymongos_lock_with_asyncio_wait_for(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not await free_after_a_cancelled_timeout(monkeypatch, asyncio.wait_for)


async def test_with_the_installed_wait_the_lock_is_free_again(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await free_after_a_cancelled_timeout(monkeypatch, driver_waits.wait_for)


async def test_install_gives_pymongo_the_safe_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pymongo.lock, "wait_for", asyncio.wait_for)
    assert driver_waits.install() == (sys.version_info < (3, 12))
    if sys.version_info < (3, 12):
        assert getattr(pymongo.lock, "wait_for") is driver_waits.wait_for  # noqa: B009 (not exported)
        assert driver_waits.install()  # twice is once


async def test_install_refuses_a_pymongo_it_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    async def other(awaitable: Awaitable[Any], timeout: float | None) -> Any:  # noqa: ASYNC109 (its signature)
        return await awaitable

    monkeypatch.setattr(pymongo.lock, "wait_for", other)
    if sys.version_info < (3, 12):
        with pytest.raises(RuntimeError, match=r"no longer waits through asyncio\.wait_for"):
            driver_waits.install()


async def test_the_safe_wait_times_out_and_returns() -> None:
    assert await driver_waits.wait_for(asyncio.sleep(0, result=7), 1) == 7
    with pytest.raises(TimeoutError):
        await driver_waits.wait_for(asyncio.sleep(1), 0.01)
