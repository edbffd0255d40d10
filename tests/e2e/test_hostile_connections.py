"""Hostile connections against the running gateway, measured in its own memory: hundreds of
connections that each send a megabyte of headers, and two dozen bodies that drip a byte at a
time from two dozen addresses while staff keep writing.

The gateway's resident memory (VmRSS of its process) is sampled throughout: it must stay under
PEAK_RSS_BYTES and come back to within RETURN_RSS_BYTES of where it started once the
connections are gone. Process mode only: the others give no access to the gateway's process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest
from yarl import URL

from tests.e2e.client import JSON, Api
from tests.e2e.control import ProcessControl, StackControl

pytestmark = pytest.mark.since("gateway", "1.1.0")  # the bounds these tests measure

PEAK_RSS_BYTES = 128 * 1024 * 1024
RETURN_RSS_BYTES = 20 * 1024 * 1024
HEAD_CONNECTIONS = 400
HEAD_BYTES_SENT = 1024 * 1024
DRIPPING_BODIES = 24
DRIP_LENGTH = 1024 * 1024
SOURCES = [f"127.0.0.{n}" for n in range(2, 2 + DRIPPING_BODIES)]
"""One client address per dripping body (any 127.0.0.0/8 address reaches loopback)."""
SETTLE_SECONDS = 2.0
"""After the connections close: the gateway drops a refused client's bytes for a second."""


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


@dataclass
class RssSampler:
    pid: int
    start: int = 0
    peak: int = 0
    samples: list[int] = field(default_factory=list)

    def sample(self) -> int:
        value = rss_bytes(self.pid)
        self.samples.append(value)
        self.peak = max(self.peak, value)
        return value


@contextlib.asynccontextmanager
async def sampling(pid: int) -> AsyncIterator[RssSampler]:
    sampler = RssSampler(pid)
    sampler.start = sampler.sample()

    async def run() -> None:
        while True:
            sampler.sample()
            await asyncio.sleep(0.02)

    task = asyncio.create_task(run())
    try:
        yield sampler
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture
def gateway_pid(control: StackControl) -> int:
    if not isinstance(control, ProcessControl):
        pytest.skip("the gateway's memory is read from its process: process mode only")
    pid = control.stack.pid("gateway")
    assert pid is not None
    return pid


@pytest.fixture(autouse=True)
def enough_file_descriptors() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 4 * HEAD_CONNECTIONS))
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def address(api: Api) -> tuple[str, int]:
    url = URL(api.base_url)
    assert url.host is not None
    assert url.host.startswith("127.")
    assert url.port is not None
    return url.host, url.port


def report(what: str, sampler: RssSampler, after: int) -> None:
    mib = 1024 * 1024
    print(
        f"{what}: gateway RSS start {sampler.start / mib:.1f} MiB, peak {sampler.peak / mib:.1f} MiB, "
        f"after {after / mib:.1f} MiB"
    )


async def send_megabyte_of_headers(host: str, port: int, source: str) -> bytes:
    """A head of HEAD_BYTES_SENT bytes (lines of 8000 bytes, as aiohttp alone would take); what
    the gateway answered."""
    reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
    line = b"X-Pad: " + b"p" * 8000 + b"\r\n"
    try:
        writer.write(b"GET /livez HTTP/1.1\r\nHost: t\r\n" + line * (HEAD_BYTES_SENT // len(line)))
        with contextlib.suppress(ConnectionError, TimeoutError):
            await asyncio.wait_for(writer.drain(), 5)
        with contextlib.suppress(ConnectionError):
            return await asyncio.wait_for(reader.read(4096), 5)
        return b""
    finally:
        writer.close()


async def test_a_megabyte_of_headers_on_hundreds_of_connections_costs_the_gateway_little(
    api: Api, gateway_pid: int
) -> None:
    host, port = address(api)
    async with sampling(gateway_pid) as sampler:
        answers = await asyncio.wait_for(
            asyncio.gather(
                *(
                    send_megabyte_of_headers(host, port, SOURCES[n % len(SOURCES)])
                    for n in range(HEAD_CONNECTIONS)
                )
            ),
            60,
        )
        await asyncio.sleep(SETTLE_SECONDS)
        after = sampler.sample()
    report(f"{HEAD_CONNECTIONS} x 1 MiB of headers", sampler, after)
    statuses = {answer.split(b" ", 2)[1] for answer in answers if answer.startswith(b"HTTP/1.1 ")}
    assert statuses, answers[:3]
    assert statuses <= {b"431", b"429", b"503"}, statuses
    assert sampler.peak < PEAK_RSS_BYTES
    assert after - sampler.start < RETURN_RSS_BYTES
    assert (await api.call("GET", "/store/inventory", api_key=api.static_key)).status == 200


async def drip_a_body(host: str, port: int, source: str, stop: asyncio.Event) -> bytes:
    """A sign-up whose 1 MiB body comes a byte every half second until `stop`; what the gateway
    answered (a 503 at once when it would not hold the body)."""
    reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
    try:
        writer.write(
            b"POST /v2/user HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {DRIP_LENGTH}\r\n\r\n".encode()
            + b"{"
        )
        reading = asyncio.create_task(reader.read(4096))
        while not stop.is_set() and not reading.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
            with contextlib.suppress(ConnectionError):
                writer.write(b" ")
        if reading.done():
            return reading.result()
        reading.cancel()
        return b""
    finally:
        writer.close()


async def test_dripping_bodies_from_many_addresses_leave_staff_writes_and_memory_alone(
    api: Api, gateway_pid: int, unique: str
) -> None:
    host, port = address(api)
    stop = asyncio.Event()
    async with sampling(gateway_pid) as sampler:
        drips = [asyncio.create_task(drip_a_body(host, port, source, stop)) for source in SOURCES]
        await asyncio.sleep(1.5)  # every body has started dripping (or been refused)
        started = time.monotonic()
        pet = {"name": f"drip-{unique}", "photoUrls": []}
        write = await api.call(
            "POST", "/pet", body=json.dumps(pet), content_type=JSON, api_key=api.static_key
        )
        elapsed = time.monotonic() - started
        still_dripping = sum(not drip.done() for drip in drips)
        stop.set()
        answers = await asyncio.wait_for(asyncio.gather(*drips), 10)
        await asyncio.sleep(SETTLE_SECONDS)
        after = sampler.sample()
    report(f"{DRIPPING_BODIES} dripping bodies", sampler, after)
    assert write.status == 200, write.text
    assert elapsed < 5
    assert still_dripping > 0  # the write was made while bodies dripped
    assert all(answer == b"" or answer.startswith(b"HTTP/1.1 503") for answer in answers), answers
    assert sampler.peak < PEAK_RSS_BYTES
    assert after - sampler.start < RETURN_RSS_BYTES
