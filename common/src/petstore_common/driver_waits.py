"""PyMongo's condition waits, safe against a cancellation on Python 3.11.

PyMongo's async driver waits on its conditions (server selection, the pool's size and
connecting limits) through `asyncio.wait_for(condition.wait(), timeout)` (`pymongo.lock`). On
Python 3.11, `wait_for` runs the wait in a task of its own; a cancellation of the caller (a gRPC
deadline passing, say) that arrives just after the wait's own timeout fired, while that inner
task takes the condition's lock back, lets the caller release the lock it no longer holds
("Lock is not acquired") and leaves the inner task dead holding it (cpython#86296; 3.12
rewrote `wait_for` on `asyncio.timeout`, not backported). Every later operation of that client
then waits for ever: the service stayed NOT_SERVING with an idle loop about once in fifty
database restarts under writes.

`install` gives PyMongo's waits 3.12's `wait_for`: the wait runs in the caller's own task under
a timeout, so a cancellation reaches `Condition.wait`, which takes its lock back before it
passes the cancellation on. It changes nothing else; on 3.12 and later it does nothing.
It reaches one name inside PyMongo (`pymongo.lock.wait_for`), checked at install: should a
release stop waiting through `asyncio.wait_for`, `install` fails loudly instead of guessing.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

import pymongo.lock

T = TypeVar("T")


async def wait_for(awaitable: Awaitable[T], timeout: float | None) -> T:  # noqa: ASYNC109 (wait_for's own)
    """`asyncio.wait_for` as Python 3.12 has it: the awaitable runs in the caller's task."""
    async with asyncio.timeout(timeout):
        return await awaitable


def install() -> bool:
    """Make PyMongo's condition waits cancellation-safe (Python < 3.12); True if it did."""
    if sys.version_info >= (3, 12):
        return False
    current = getattr(pymongo.lock, "wait_for", None)
    if current is wait_for:
        return True
    if current is not asyncio.wait_for:
        raise RuntimeError(
            "pymongo.lock no longer waits through asyncio.wait_for: check petstore_common.driver_waits"
        )
    pymongo.lock.wait_for = wait_for  # type: ignore[attr-defined,assignment]
    return True
