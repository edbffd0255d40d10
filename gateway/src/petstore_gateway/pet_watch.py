"""Keeps the pet cache coherent: follows the pet service's WatchPets stream, and stops serving
from the cache (reading through) whenever the stream is not known to be up. A broken stream is
reopened asking to resume after the last message applied: when the service still has every
change since, the cache keeps its entries (a connection that ages out every 30 s would
otherwise empty it each time); else it forgets them.

A stream is also lost when it falls silent for SILENCE_MULTIPLE of the heartbeats its last
message announced (heartbeat_ms), so the limit follows the pet service actually reached, of
whichever release. Before a stream's first message, and while it announces none (a pet service
from before heartbeat_ms), the fallback limit applies: the PET_WATCH_SILENCE_SECONDS setting."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

import grpc

from petstore.pet.v1 import pet_service_pb2
from petstore_common.watch import MAX_HEARTBEAT_SECONDS, SILENCE_MULTIPLE
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


OpenStream = Callable[[pet_service_pb2.WatchPetsRequest], WatchStream]


class PetWatcher:
    def __init__(self, cache: PetCache, open_stream: OpenStream, *, fallback_silence_seconds: float) -> None:
        self._cache = cache
        self._open_stream = open_stream
        self._fallback_silence_seconds = fallback_silence_seconds
        """A stream quiet for longer (no change, no heartbeat) is taken for dead while it has
        announced no heartbeat: before its first message, or from an older pet service."""
        self.streams_opened = 0
        self._failures = 0
        self._unsupported_told = False
        self._position: tuple[str, int] | None = None
        """(epoch, sequence) of the last message applied, while the entries it kept are valid."""
        self._lost_at: float | None = None
        """When the stream last live was lost (loop time); None while live or never yet live."""
        self._outage_told = False
        """The loss was logged at INFO: its end is too."""
        self._ever_live = False

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
            self._lose()

    async def _follow_once(self) -> float:
        """One stream, followed until it fails; returns the wait before the next."""
        request = pet_service_pb2.WatchPetsRequest()
        if self._position is not None:
            request.resume_epoch, request.resume_after = self._position
        try:
            stream = self._open_stream(request)
        except Exception:  # a bug, not an outage: never let it stop the watcher (or serve stale)
            log.exception("cannot open the pet watch: reading through")
            self._lose()
            return UNSUPPORTED_RETRY_SECONDS
        self.streams_opened += 1
        # Per stream: a reconnect may reach another replica, of another release.
        silence = self._fallback_silence_seconds
        try:
            first = await self._read(stream, silence)  # live from here on
            silence = self._silence_after(first)
            self._apply(first)  # a resumed stream's first message holds the changes missed
            held = self._cache.size[0]
            self._cache.go_live(resumed=first.resumed)  # else every entry is forgotten
            self._log_live(resumed=first.resumed, forgotten=0 if first.resumed else held)
            self._lost_at, self._outage_told = None, False
            self._failures = 0
            self._unsupported_told = False
            while True:
                message = await self._read(stream, silence)
                silence = self._silence_after(message)
                self._apply(message)
        except grpc.aio.AioRpcError as exc:
            if exc.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNIMPLEMENTED):
                self._lose()
                # Said once: the service is asked again every 30 s and answers the same.
                log.log(
                    logging.DEBUG if self._unsupported_told else logging.WARNING,
                    "the pet service cannot stream its changes: reading every pet through",
                    extra={"grpc_code": exc.code().name, "detail": exc.details()},
                )
                self._unsupported_told = True
                return UNSUPPORTED_RETRY_SECONDS
            self._cache.suspend()
            self._log_lost(grpc_code=exc.code().name)
        except _StreamEnded as exc:
            self._cache.suspend()
            self._log_lost(reason=str(exc))
        finally:
            stream.cancel()
        self._failures += 1
        return RETRY_SECONDS[min(self._failures, len(RETRY_SECONDS)) - 1]

    def _log_lost(self, **why: str) -> None:
        # A stream that breaks while live is usually the planned connection age-out, resumed a
        # moment later with the cache intact: routine, DEBUG. A reconnect that fails too makes
        # it an outage: its loss is said once at INFO, and its end, with how long it lasted.
        # What costs something (the cache emptied) is a WARNING.
        now = asyncio.get_running_loop().time()
        if self._lost_at is None:
            self._lost_at = now
        if self._failures == 0:
            log.debug("pet watch lost: reading through until it resumes", extra=why)
        elif not self._outage_told:
            self._outage_told = True
            log.info(
                "pet watch down: reading every pet through, reconnecting",
                extra={**why, "down_seconds": round(now - self._lost_at, 2)},
            )

    def _log_live(self, *, resumed: bool, forgotten: int) -> None:
        if forgotten:
            log.warning(
                "pet cache emptied: the pet watch could not resume where it stopped",
                extra={"entries": forgotten},
            )
        down: dict[str, float] = {}
        if self._lost_at is not None:
            down["down_seconds"] = round(asyncio.get_running_loop().time() - self._lost_at, 2)
        if not self._ever_live:
            self._ever_live = True
            log.info("pet cache live", extra=down)
        elif self._outage_told:
            log.info("pet watch back: cache live again", extra={**down, "resumed": resumed})
        else:
            log.debug("pet watch resumed", extra={**down, "resumed": resumed})

    def _apply(self, message: pet_service_pb2.WatchPetsResponse) -> None:
        for change in message.changes:
            self._cache.changed(change.id, change.version, deleted=change.deleted)
        self._position = (message.epoch, message.sequence) if message.epoch else None

    def _silence_after(self, message: pet_service_pb2.WatchPetsResponse) -> float:
        """The silence after `message` that loses its stream."""
        if not message.heartbeat_ms:  # not announced: a pet service from before heartbeat_ms
            return self._fallback_silence_seconds
        return SILENCE_MULTIPLE * min(message.heartbeat_ms / 1000, MAX_HEARTBEAT_SECONDS)

    def _lose(self) -> None:
        self._cache.lose()
        self._position = None

    async def _read(self, stream: WatchStream, silence: float) -> pet_service_pb2.WatchPetsResponse:
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation that comes
        # in the same turn as the message (cpython#86296), and the stopping gateway then kept
        # following the stream, heartbeat after heartbeat, instead of exiting.
        try:
            async with asyncio.timeout(silence):
                message = await stream.read()
        except TimeoutError:
            raise _StreamEnded(f"nothing heard for {silence:g} s") from None
        if not isinstance(message, pet_service_pb2.WatchPetsResponse):
            raise _StreamEnded("the stream ended")
        return message


class _StreamEnded(Exception):
    pass
