"""No stale reads under load: sixteen clients read pets at random with 5% writes mixed in,
through two gateway processes on the embedded store (whose pet service streams its changes, so
the gateways' caches serve). A client that got a write acknowledged never reads that pet at an
older version afterwards (petstore_bench.mixed keeps the score)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import ClientSession

from petstore_bench.mixed import run_mixed
from petstore_devstack.stack import Stack
from tests.faults.conftest import STATIC_KEY, running_stack

KEY = {"api_key": STATIC_KEY, "Accept": "application/json"}
PETS = 50


@pytest.fixture
def stack(log_dir: Path) -> Iterator[Stack]:
    with running_stack(log_dir, GATEWAY_WORKERS=str(GATEWAY_WORKERS), RATE_LIMIT_PER_SECOND="0") as stack:
        yield stack


GATEWAY_WORKERS = 2
LIVE_CACHE = re.compile(r'"msg":\s*"pet cache live"')


async def wait_for_live_caches(stack: Stack, count: int, timeout_s: float = 30.0) -> None:
    """Until every gateway worker follows the watch stream: on a busy machine the second one
    can start after the clients have connected, and then serves none of them."""
    assert stack.log_dir is not None
    log = stack.log_dir / "gateway.log"
    deadline = asyncio.get_running_loop().time() + timeout_s
    while len(LIVE_CACHE.findall(text := log.read_text() if log.exists() else "")) < count:
        if asyncio.get_running_loop().time() > deadline:
            lines = [line for line in text.splitlines() if '"msg":"request"' not in line]
            raise AssertionError(
                f"fewer than {count} live gateway caches; the gateway said:\n" + "\n".join(lines[-40:])
            )
        await asyncio.sleep(0.1)


HITS = re.compile(r'^gateway_pet_cache_lookups_total\{result="hit"\} ([0-9.e+]+)$', re.MULTILINE)


async def cache_hits(session: ClientSession, stack: Stack) -> float:
    """Every worker's hits, each read from its own metrics port."""
    found: list[str] = []
    for worker in range(GATEWAY_WORKERS):
        async with session.get(stack.gateway_metrics_url(worker)) as response:
            text = await response.text()
        found += HITS.findall(text)
    return sum(float(value) for value in found)


async def test_sixteen_clients_with_five_percent_writes_never_read_a_stale_pet(
    stack: Stack, session: ClientSession
) -> None:
    pets: dict[int, str] = {}
    for index in range(PETS):
        name = f"pet-{index}"
        async with session.post(
            f"{stack.base_url}/pet", json={"name": name, "photoUrls": []}, headers=KEY
        ) as r:
            assert r.status == 200
            pets[(await r.json())["id"]] = name
    await wait_for_live_caches(stack, GATEWAY_WORKERS)

    result = await run_mixed(stack.base_url, STATIC_KEY, pets, clients=16, seconds=5.0, write_share=0.05)

    assert result.errors == 0
    assert result.stale_reads == 0, result.stale_examples
    assert result.writes > 20  # writes were really mixed in
    assert result.reads > 400
    assert await cache_hits(session, stack) > 0  # and the caches really served
