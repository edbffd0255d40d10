"""Reads with a few writes mixed in, and a checker that counts stale reads.

Each client keeps one connection (so one gateway process, with GATEWAY_WORKERS) and remembers,
per pet, the version of its own last acknowledged write (from the write's ETag). A read of that
pet answering an older version is a stale read: the read cache must make that impossible.
wrk cannot do this (its scripts do not know which connection answers), hence aiohttp.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from dataclasses import dataclass, field

import aiohttp

VERSION = re.compile(r'"([0-9]+)-[0-9a-f]{16}"')


@dataclass
class MixedResult:
    reads: int = 0
    writes: int = 0
    errors: int = 0
    stale_reads: int = 0
    seconds: float = 0.0
    stale_examples: list[str] = field(default_factory=list)

    @property
    def requests_per_second(self) -> float:
        return (self.reads + self.writes) / self.seconds if self.seconds else 0.0


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
    connector = aiohttp.TCPConnector(limit=1)  # one connection: one gateway process
    async with aiohttp.ClientSession(connector=connector, headers={"Accept": "application/json"}) as session:
        n = 0
        while time.monotonic() < stop_at:
            n += 1
            pet_id = rng.choice(list(pets))
            if rng.random() < write_share:
                body = {"id": pet_id, "name": f"{pets[pet_id]}-{seed}-{n}", "photoUrls": []}
                async with session.put(
                    f"{base_url}/pet", json=body, headers={"api_key": api_key}
                ) as response:
                    await response.read()
                    version = _version(response.headers.get("ETag"))
                    if response.status != 200 or version is None:
                        result.errors += 1
                        continue
                    result.writes += 1
                    acknowledged[pet_id] = max(version, acknowledged.get(pet_id, 0))
            else:
                async with session.get(f"{base_url}/pet/{pet_id}") as response:
                    await response.read()
                    version = _version(response.headers.get("ETag"))
                    if response.status != 200 or version is None:
                        result.errors += 1
                        continue
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
