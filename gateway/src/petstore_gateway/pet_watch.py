"""Keeps the pet cache coherent: follows the pet service's WatchPets stream, and empties the
cache (reading through) whenever the stream is not known to be up."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

import grpc

from petstore.pet.v1 import pet_service_pb2
from petstore_gateway.pet_cache import PetCache

log = logging.getLogger(__name__)

RETRY_SECONDS = (0.1, 0.2, 0.5, 1.0, 2.0)
"""Waits before reconnecting after a lost stream, one step longer after each failure in a row."""
UNSUPPORTED_RETRY_SECONDS = 30.0
"""A pet service that cannot stream changes (its database has none) is asked again this rarely."""


class WatchStream(Protocol):
    """What the watcher needs of a grpc.aio server-streaming call."""

    async def read(self) -> Any: ...

    def cancel(self) -> bool: ...


OpenStream = Callable[[], WatchStream]


class PetWatcher:
    def __init__(self, cache: PetCache, open_stream: OpenStream, *, silence_seconds: float) -> None:
        self._cache = cache
        self._open_stream = open_stream
        self._silence_seconds = silence_seconds
        """A stream quiet for longer (no change, no heartbeat) is taken for dead."""
        self.streams_opened = 0
        self._failures = 0

    async def run(self) -> None:
        """Until cancelled: follow the stream, and after each loss reconnect."""
        try:
            while True:
                wait = await self._follow_once()
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    # grpc.aio turns the cancellation of a pending read into a CANCELLED status.
                    raise asyncio.CancelledError
                await asyncio.sleep(wait)  # a back-off between attempts, not a wait on a condition
        finally:
            self._cache.lose()

    async def _follow_once(self) -> float:
        """One stream, followed until it fails; returns the wait before the next."""
        try:
            stream = self._open_stream()
        except Exception:  # a bug, not an outage: never let it stop the watcher (or serve stale)
            log.exception("cannot open the pet watch: reading through")
            self._cache.lose()
            return UNSUPPORTED_RETRY_SECONDS
        self.streams_opened += 1
        try:
            await self._read(stream)  # the first message: live from here on
            self._cache.go_live()
            self._failures = 0
            log.info("pet cache live")
            while True:
                message = await self._read(stream)
                for change in message.changes:
                    self._cache.changed(change.id, change.version, deleted=change.deleted)
        except grpc.aio.AioRpcError as exc:
            self._cache.lose()
            if exc.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNIMPLEMENTED):
                log.warning(
                    "the pet service cannot stream its changes: reading every pet through",
                    extra={"grpc_code": exc.code().name, "detail": exc.details()},
                )
                return UNSUPPORTED_RETRY_SECONDS
            log.warning("pet watch lost: reading through", extra={"grpc_code": exc.code().name})
        except _StreamEnded as exc:
            self._cache.lose()
            log.warning("pet watch lost: reading through", extra={"reason": str(exc)})
        finally:
            stream.cancel()
        self._failures += 1
        return RETRY_SECONDS[min(self._failures, len(RETRY_SECONDS)) - 1]

    async def _read(self, stream: WatchStream) -> pet_service_pb2.WatchPetsResponse:
        try:
            message = await asyncio.wait_for(stream.read(), self._silence_seconds)
        except TimeoutError:
            raise _StreamEnded(f"nothing heard for {self._silence_seconds} s") from None
        if not isinstance(message, pet_service_pb2.WatchPetsResponse):
            raise _StreamEnded("the stream ended")
        return message


class _StreamEnded(Exception):
    pass
