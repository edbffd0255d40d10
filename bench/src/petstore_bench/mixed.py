"""Reads with a few writes mixed in, and a checker that counts stale reads.

Each client keeps one connection (so one gateway process, with GATEWAY_WORKERS) and remembers,
per pet, the version of its own last acknowledged write (from the write's ETag). A read of that
pet answering an older version is a stale read: the read cache must make that impossible.
wrk cannot do this (its scripts do not know which connection answers), hence aiohttp.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import statistics
import time
from dataclasses import dataclass, field

import aiohttp

from petstore_bench.wrk import Errors, Latency, WrkResult

VERSION = re.compile(r'"([0-9]+)-[0-9a-f]{16}"')
REQUEST_TIMEOUT_S = 10.0
"""Like wrk's --timeout: a request taking longer counts as a socket error."""


@dataclass
class MixedResult:
    reads: int = 0
    writes: int = 0
    errors: int = 0
    """Answers that are not a 200 with a versioned ETag (status_errors + unexpected) plus
    requests that failed on the socket (socket_errors)."""
    status_errors: int = 0
    """Answers of 400 or more."""
    unexpected: int = 0
    """Answers below 400 that are not a 200, or a 200 without a versioned ETag."""
    socket_errors: int = 0
    """Requests that got no answer (connection refused or reset, timeout)."""
    stale_reads: int = 0
    seconds: float = 0.0
    bytes: int = 0
    latencies_us: list[float] = field(default_factory=list)
    """One per answered request (errors included), in microseconds."""
    stale_examples: list[str] = field(default_factory=list)

    @property
    def requests_per_second(self) -> float:
        return (self.reads + self.writes) / self.seconds if self.seconds else 0.0

    def to_wrk_result(self) -> WrkResult:
        """The shape every other scenario has (what the report's table, JSON and chart take),
        with stale_reads set."""
        return WrkResult(
            requests=self.reads + self.writes + self.status_errors + self.unexpected,
            duration_s=self.seconds,
            bytes=self.bytes,
            errors=Errors(read=self.socket_errors, status=self.status_errors, unexpected=self.unexpected),
            latency_us=latency(self.latencies_us),
            stale_reads=self.stale_reads,
        )


def percentile(ordered: list[float], q: float) -> float:
    """The nearest-rank q-th percentile of sorted values (0 when there are none)."""
    if not ordered:
        return 0.0
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return ordered[min(rank, len(ordered)) - 1]


def latency(values_us: list[float]) -> Latency:
    ordered = sorted(values_us)
    if not ordered:
        return Latency(0, 0, 0, 0, 0, 0, 0, 0, 0)
    return Latency(
        min=ordered[0],
        max=ordered[-1],
        mean=statistics.fmean(ordered),
        stdev=statistics.pstdev(ordered),
        p50=percentile(ordered, 50),
        p75=percentile(ordered, 75),
        p90=percentile(ordered, 90),
        p99=percentile(ordered, 99),
        p999=percentile(ordered, 99.9),
    )


def _failed(result: MixedResult, status: int) -> None:
    result.errors += 1
    if status >= 400:
        result.status_errors += 1
    else:
        result.unexpected += 1


def _version(etag: str | None) -> int | None:
    match = VERSION.fullmatch(etag or "")
    return int(match.group(1)) if match else None


async def _client(
    base_url: str,
    api_key: str,
    pets: dict[int, str],
    write_share: float,
    stop_at: float,
    result: MixedResult,
    seed: int,
) -> None:
    rng = random.Random(seed)  # noqa: S311 - load generation, not secrets
    acknowledged: dict[int, int] = {}
    ids = list(pets)
    connector = aiohttp.TCPConnector(limit=1)  # one connection: one gateway process
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(
        connector=connector, headers={"Accept": "application/json"}, timeout=timeout
    ) as session:
        n = 0
        while time.monotonic() < stop_at:
            n += 1
            pet_id = rng.choice(ids)
            write = rng.random() < write_share
            started = time.perf_counter()
            try:
                if write:
                    body = {"id": pet_id, "name": f"{pets[pet_id]}-{seed}-{n}", "photoUrls": []}
                    request = session.put(f"{base_url}/pet", json=body, headers={"api_key": api_key})
                else:
                    request = session.get(f"{base_url}/pet/{pet_id}")
                async with request as response:
                    answer = await response.read()
                    status, etag = response.status, response.headers.get("ETag")
            except (aiohttp.ClientError, TimeoutError):
                result.errors += 1
                result.socket_errors += 1
                continue
            result.latencies_us.append((time.perf_counter() - started) * 1_000_000)
            result.bytes += len(answer)
            version = _version(etag)
            if status != 200 or version is None:
                _failed(result, status)
                continue
            if write:
                result.writes += 1
                acknowledged[pet_id] = max(version, acknowledged.get(pet_id, 0))
            else:
                result.reads += 1
                if version < acknowledged.get(pet_id, 0):
                    result.stale_reads += 1
                    if len(result.stale_examples) < 5:
                        result.stale_examples.append(
                            f"pet {pet_id}: read version {version} after writing {acknowledged[pet_id]}"
                        )


async def run_mixed(
    base_url: str,
    api_key: str,
    pets: dict[int, str],
    *,
    clients: int = 16,
    seconds: float = 5.0,
    write_share: float = 0.05,
) -> MixedResult:
    """`pets` maps ids to names; every client reads and writes them for `seconds`."""
    result = MixedResult()
    started = time.monotonic()
    stop_at = started + seconds
    await asyncio.gather(
        *(_client(base_url, api_key, pets, write_share, stop_at, result, seed) for seed in range(clients))
    )
    result.seconds = time.monotonic() - started
    return result
