"""The watcher against a fake stream: live only after the first message, changes applied in
order; any loss (error, end, silence) stops the cache serving until a new stream is live, which
keeps the entries only when it resumed where the last one stopped. Silence is timed by the
heartbeat the stream announces, else by the fallback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from petstore.pet.v1 import pet_service_pb2
from petstore_gateway import pet_watch
from petstore_gateway.negotiation import BodyFormat
from petstore_gateway.pet_cache import CachedPet, PetCache
from petstore_gateway.pet_watch import PetWatcher

JSON = BodyFormat.JSON


class Failure(grpc.aio.AioRpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        super().__init__(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=code.name)


END = object()


class FakeStream:
    def __init__(self) -> None:
        self.messages: asyncio.Queue[Any] = asyncio.Queue()
        self.cancelled = False

    async def read(self) -> Any:
        item = await self.messages.get()
        if isinstance(item, Exception):
            raise item
        if item is END:
            return grpc.aio.EOF
        return item

    def cancel(self) -> bool:
        self.cancelled = True
        return True

    def send(
        self,
        *changes: tuple[int, int, bool],
        epoch: str = "",
        sequence: int = 0,
        resumed: bool = False,
        heartbeat_ms: int = 0,  # 0: a pet service from before the announcement
    ) -> None:
        self.messages.put_nowait(
            pet_service_pb2.WatchPetsResponse(
                changes=[pet_service_pb2.PetChange(id=i, version=v, deleted=d) for i, v, d in changes],
                epoch=epoch,
                sequence=sequence,
                resumed=resumed,
                heartbeat_ms=heartbeat_ms,
            )
        )


class Streams:
    def __init__(self) -> None:
        self.opened: list[FakeStream] = []
        self.requests: list[pet_service_pb2.WatchPetsRequest] = []
        self.available: asyncio.Queue[FakeStream] = asyncio.Queue()

    def open(self, request: pet_service_pb2.WatchPetsRequest) -> FakeStream:
        self.requests.append(request)
        stream = FakeStream()
        self.opened.append(stream)
        self.available.put_nowait(stream)
        return stream

    async def next(self) -> FakeStream:
        async with asyncio.timeout(5):
            return await self.available.get()


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pet_watch, "RETRY_SECONDS", (0.01,))
    monkeypatch.setattr(pet_watch, "UNSUPPORTED_RETRY_SECONDS", 0.01)


@pytest.fixture
def cache() -> PetCache:
    return PetCache(max_entries=100, max_bytes=1 << 20)


@contextlib.asynccontextmanager
async def watching(cache: PetCache, *, fallback_silence_seconds: float) -> AsyncIterator[Streams]:
    streams = Streams()
    watcher = PetWatcher(cache, streams.open, fallback_silence_seconds=fallback_silence_seconds)
    task = asyncio.create_task(watcher.run())
    try:
        yield streams
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert not cache.live  # stopping forgets everything too


@pytest.fixture
async def streams(cache: PetCache) -> AsyncIterator[Streams]:
    async with watching(cache, fallback_silence_seconds=0.3) as streams:
        yield streams


async def until(condition: Any) -> None:
    for _ in range(1000):  # 5 s
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition never held")


def fill(cache: PetCache, pet_id: int, version: int) -> None:
    cache.end_fill(cache.begin_fill(pet_id), JSON, CachedPet(version, b"{}", f'"{version}"'))


async def test_live_only_once_the_stream_says_so(cache: PetCache, streams: Streams) -> None:
    stream = await streams.next()
    await asyncio.sleep(0.02)
    assert not cache.live
    stream.send()
    await until(lambda: cache.live)


async def test_changes_drop_entries_in_order_and_out_of_order_ones_never_drop_newer(
    cache: PetCache, streams: Streams
) -> None:
    stream = await streams.next()
    stream.send()
    await until(lambda: cache.live)
    fill(cache, 1, 3)
    fill(cache, 2, 5)
    stream.send((2, 4, False))  # older than the entry: kept
    stream.send((1, 4, False))
    await until(lambda: cache.get(1, JSON) is None)
    assert cache.get(2, JSON) is not None
    stream.send((2, 0, True))
    await until(lambda: cache.get(2, JSON) is None)


@pytest.mark.parametrize(
    "loss",
    [Failure(grpc.StatusCode.UNAVAILABLE), END, "silence"],
    ids=["error", "end of stream", "silence"],
)
async def test_any_loss_stops_the_cache_and_a_fresh_stream_empties_it(
    cache: PetCache, streams: Streams, loss: Any
) -> None:
    first = await streams.next()
    first.send()
    await until(lambda: cache.live)
    fill(cache, 1, 1)
    if loss != "silence":
        first.messages.put_nowait(loss)
    await until(lambda: not cache.live)
    assert cache.get(1, JSON) is None
    assert first.cancelled

    second = await streams.next()
    fill(cache, 2, 1)  # reads go through meanwhile, and nothing is kept
    assert cache.size[0] == 1  # the entry from before waits to learn whether the stream resumes
    second.send()  # it does not
    await until(lambda: cache.live)
    assert cache.get(1, JSON) is None  # nothing from before the loss
    assert cache.size == (0, 0)


async def test_a_stream_that_resumes_keeps_the_cache_and_applies_what_was_missed(
    cache: PetCache, streams: Streams, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=pet_watch.__name__)
    first = await streams.next()
    first.send(epoch="e1", sequence=7)
    await until(lambda: cache.live)
    fill(cache, 1, 1)
    fill(cache, 2, 1)
    in_flight = cache.begin_fill(3)
    first.send((9, 1, False), epoch="e1", sequence=8)
    first.messages.put_nowait(Failure(grpc.StatusCode.UNAVAILABLE))  # the connection aged out

    second = await streams.next()
    assert (streams.requests[-1].resume_epoch, streams.requests[-1].resume_after) == ("e1", 8)
    assert not cache.live
    second.send((2, 2, False), epoch="e1", sequence=9, resumed=True)  # pet 2 changed meanwhile
    await until(lambda: cache.live)
    assert cache.get(1, JSON) is not None  # kept
    assert cache.get(2, JSON) is None  # the missed change dropped it
    cache.end_fill(in_flight, JSON, CachedPet(1, b"{}", '"1"'))
    assert cache.get(3, JSON) is None  # a read begun before the loss is never kept
    # The routine age-out and its resume are DEBUG: an idle, healthy stack says nothing.
    watch_levels = {r.levelno for r in caplog.records if r.name == pet_watch.__name__}
    assert watch_levels == {logging.INFO, logging.DEBUG}  # INFO: the first "live"
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == ["pet cache live"]


async def test_a_reconnect_that_fails_again_is_told_once_at_info(
    cache: PetCache, streams: Streams, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=pet_watch.__name__)
    first = await streams.next()
    first.send(epoch="e1", sequence=1)
    await until(lambda: cache.live)
    first.messages.put_nowait(Failure(grpc.StatusCode.UNAVAILABLE))
    for _ in range(3):  # the service stays away
        (await streams.next()).messages.put_nowait(Failure(grpc.StatusCode.UNAVAILABLE))
    back = await streams.next()
    back.send(epoch="e1", sequence=1, resumed=True)
    await until(lambda: cache.live)
    told = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [(r.levelno, r.getMessage()) for r in told] == [
        (logging.INFO, "pet cache live"),
        (logging.INFO, "pet watch down: reading every pet through, reconnecting"),
        (logging.INFO, "pet watch back: cache live again"),
    ]
    # How long it was down: from the loss of the live stream, as of each line.
    down_when_told, down_in_all = (r.__dict__["down_seconds"] for r in told[1:])
    assert 0 < down_when_told < down_in_all < 5
    assert down_in_all >= sum(pet_watch.RETRY_SECONDS[:3])  # three waits before the fourth attempt


async def test_a_stream_is_lost_after_three_of_the_heartbeats_it_announces(cache: PetCache) -> None:
    loop = asyncio.get_running_loop()
    async with watching(cache, fallback_silence_seconds=30) as streams:  # far longer than the test
        stream = await streams.next()
        started = loop.time()
        stream.send(heartbeat_ms=20)  # the first message already sets the limit
        await until(lambda: cache.live)
        await until(lambda: not cache.live)
        silent = loop.time() - started
        assert stream.cancelled
    assert 0.055 < silent < 1.0  # 3 x 20 ms, not the fallback's 30 s


async def test_a_stream_that_announces_no_heartbeat_is_timed_by_the_fallback(cache: PetCache) -> None:
    loop = asyncio.get_running_loop()
    async with watching(cache, fallback_silence_seconds=1.0) as streams:
        announcing = await streams.next()
        started = loop.time()
        announcing.send(heartbeat_ms=20)
        await until(lambda: cache.live)
        await until(lambda: not cache.live)
        assert loop.time() - started < 0.5  # well before the fallback: the announcement counts
        older = await streams.next()  # the reconnect reached a pet service of an older release
        started = loop.time()
        older.send()
        await until(lambda: cache.live)
        await asyncio.sleep(0.3)  # many times 3 x 20 ms: that stream's limit is not this one's
        assert cache.live
        await until(lambda: not cache.live)
        silent = loop.time() - started
    assert 0.95 < silent < 4.0  # the fallback


async def test_an_announced_heartbeat_longer_than_the_believable_one_is_capped(
    cache: PetCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream claiming a heartbeat of hours would keep a dead stream, and the cache, live."""
    monkeypatch.setattr(pet_watch, "MAX_HEARTBEAT_SECONDS", 0.02)
    loop = asyncio.get_running_loop()
    async with watching(cache, fallback_silence_seconds=30) as streams:
        stream = await streams.next()
        started = loop.time()
        stream.send(heartbeat_ms=3_600_000)
        await until(lambda: cache.live)
        await until(lambda: not cache.live)
        silent = loop.time() - started
    assert 0.055 < silent < 1.0  # 3 x the cap, not 3 hours


async def test_a_resume_the_service_cannot_honour_forgets_the_cache(
    cache: PetCache, streams: Streams, caplog: pytest.LogCaptureFixture
) -> None:
    first = await streams.next()
    first.send(epoch="e1", sequence=3)
    await until(lambda: cache.live)
    fill(cache, 1, 1)
    first.messages.put_nowait(END)
    second = await streams.next()  # another replica, or the changes are no longer kept
    assert streams.requests[-1].resume_epoch == "e1"
    second.send(epoch="e2", sequence=40)
    await until(lambda: cache.live)
    assert cache.size == (0, 0)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["pet cache emptied: the pet watch could not resume where it stopped"]


async def test_a_service_that_cannot_stream_changes_is_read_through_and_asked_again(
    cache: PetCache, streams: Streams
) -> None:
    first = await streams.next()
    first.messages.put_nowait(Failure(grpc.StatusCode.FAILED_PRECONDITION))
    second = await streams.next()
    assert not cache.live
    second.send()
    await until(lambda: cache.live)


async def test_a_stop_that_comes_with_a_message_still_stops(cache: PetCache) -> None:
    streams = Streams()
    # A silence far longer than the test: only honouring the cancellation can end the task.
    task = asyncio.create_task(PetWatcher(cache, streams.open, fallback_silence_seconds=30).run())
    stream = await streams.next()
    stream.send()
    await until(lambda: cache.live)

    stream.send((1, 2, False))  # the pending read now has its message...
    task.cancel()  # ...and the stop arrives in the same turn of the loop
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(2):
            await task
    assert not cache.live
