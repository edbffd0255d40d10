"""The gateways' pet cache against the real processes on the embedded store (the store whose
pet service streams its changes): reads are served by the cache, a write is read back at once
through the same gateway and through another gateway process, a deleted pet is gone, and a
restarted pet service (an empty store) is never answered for from the old cache."""

from __future__ import annotations

import asyncio
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from petstore_devstack.stack import Stack
from tests.faults.conftest import STATIC_KEY, running_stack

KEY = {"api_key": STATIC_KEY, "Accept": "application/json"}


@pytest.fixture
def stack(log_dir: Path) -> Iterator[Stack]:
    # The embedded store: its pet service streams its own writes.
    with running_stack(log_dir) as stack:
        yield stack


async def metric(session: ClientSession, stack: Stack, name: str) -> float:
    async with session.get(stack.gateway_metrics_url()) as response:  # its own port, not the API's
        text = await response.text()
    found = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.MULTILINE)
    assert found is not None, name
    return float(found.group(1))


async def until_live(session: ClientSession, stack: Stack, within: float = 10.0) -> None:
    for _ in range(int(within * 20)):
        if await metric(session, stack, "gateway_pet_cache_live") == 1:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the gateway's pet cache did not go live")


async def until_not_live(session: ClientSession, stack: Stack, within: float = 3.0) -> None:
    for _ in range(int(within * 100)):
        if await metric(session, stack, "gateway_pet_cache_live") == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the gateway kept its pet cache after its stream broke")


async def create(session: ClientSession, stack: Stack, name: str) -> dict[str, Any]:
    async with session.post(f"{stack.base_url}/pet", json={"name": name, "photoUrls": []}, headers=KEY) as r:
        assert r.status == 200
        body: dict[str, Any] = await r.json()
        return body


async def read(session: ClientSession, stack: Stack, pet_id: int) -> tuple[int, Any, str | None]:
    async with session.get(f"{stack.base_url}/pet/{pet_id}", headers=KEY) as response:
        return response.status, await response.json(), response.headers.get("ETag")


async def test_reads_are_cached_and_writes_are_read_back_at_once(
    stack: Stack, session: ClientSession
) -> None:
    await until_live(session, stack)
    pet = await create(session, stack, "Rex")
    hits = await metric(session, stack, 'gateway_pet_cache_lookups_total{result="hit"}')
    for _ in range(5):
        assert (await read(session, stack, pet["id"]))[0] == 200
    assert await metric(session, stack, 'gateway_pet_cache_lookups_total{result="hit"}') >= hits + 4

    for round_ in range(30):  # every write is read back at once, never the version before
        name = f"Rex {round_}"
        async with session.put(f"{stack.base_url}/pet", json={**pet, "name": name}, headers=KEY) as r:
            assert r.status == 200
            written_tag = r.headers["ETag"]
        status, body, etag = await read(session, stack, pet["id"])
        assert (status, body["name"], etag) == (200, name, written_tag)

    async with session.delete(f"{stack.base_url}/pet/{pet['id']}", headers=KEY) as r:
        assert r.status == 200
    assert (await read(session, stack, pet["id"]))[0] == 404


async def test_a_restarted_pet_service_is_never_answered_for_from_the_old_cache(
    stack: Stack, session: ClientSession
) -> None:
    await until_live(session, stack)
    pet = await create(session, stack, "Rex")
    assert (await read(session, stack, pet["id"]))[0] == 200
    assert (await read(session, stack, pet["id"]))[0] == 200  # cached now

    process = stack.processes["pet"].process
    assert process is not None
    process.send_signal(signal.SIGKILL)
    await asyncio.to_thread(process.wait)
    # The gateway learns of the broken stream from its connection (no data can change while the
    # only pet service is down): from then on the cache is gone and reads go through.
    await until_not_live(session, stack)
    status, body, _ = await read(session, stack, pet["id"])
    assert status == 503, body

    await asyncio.to_thread(stack.start_process, "pet")  # an empty embedded store
    statuses = []
    for _ in range(300):  # the gateway's channel reconnects within about a second
        statuses.append((await read(session, stack, pet["id"]))[0])
        if statuses[-1] != 503:
            break
        await asyncio.sleep(0.01)
    assert set(statuses) <= {503, 404}
    assert statuses[-1] == 404
    await until_live(session, stack)
    assert (await read(session, stack, pet["id"]))[0] == 404
    assert await metric(session, stack, "gateway_pet_cache_losses_total") >= 1


@pytest.fixture
def two_gateway_stack(log_dir: Path) -> Iterator[Stack]:
    with running_stack(log_dir, GATEWAY_WORKERS="2") as stack:
        yield stack


async def test_a_write_through_one_worker_reaches_the_cache_of_the_other(
    two_gateway_stack: Stack, session: ClientSession
) -> None:
    """Each request of `session` is a new connection, so the kernel spreads them over both
    workers: every worker's cache must drop the old version once the change is streamed."""
    stack = two_gateway_stack
    pet = await create(session, stack, "Rex")
    for _ in range(20):  # both workers cache it
        assert (await read(session, stack, pet["id"]))[0] == 200
    async with session.put(f"{stack.base_url}/pet", json={**pet, "name": "Max"}, headers=KEY) as r:
        assert r.status == 200
    await asyncio.sleep(0.2)  # the change's delivery to the other worker's stream
    names = {(await read(session, stack, pet["id"]))[1]["name"] for _ in range(20)}
    assert names == {"Max"}


@pytest.fixture
def ageing_stack(log_dir: Path) -> Iterator[Stack]:
    """Connections to the services age out every second (30 s as deployed)."""
    with running_stack(log_dir, GRPC_MAX_CONNECTION_AGE_SECONDS="1") as stack:
        yield stack


async def test_a_watch_stream_whose_connection_ages_out_resumes_and_the_cache_is_kept(
    ageing_stack: Stack, session: ClientSession
) -> None:
    stack = ageing_stack
    await until_live(session, stack)
    kept = await create(session, stack, "Rex")
    changed = await create(session, stack, "Tom")
    for pet in (kept, changed):
        await read(session, stack, pet["id"])  # cached
    suspended = await metric(session, stack, "gateway_pet_cache_suspensions_total")
    for _ in range(100):  # the stream's connection ages out within about 1 s (+ 10 s grace)
        if await metric(session, stack, "gateway_pet_cache_suspensions_total") > suspended:
            break
        await asyncio.sleep(0.2)
    else:
        raise AssertionError("the watch stream never broke")
    await until_live(session, stack)
    rename = {"id": changed["id"], "name": "Tim", "photoUrls": []}
    async with session.put(f"{stack.base_url}/pet", json=rename, headers=KEY) as r:
        assert r.status == 200

    hits = await metric(session, stack, 'gateway_pet_cache_lookups_total{result="hit"}')
    status, body, _ = await read(session, stack, kept["id"])
    assert status == 200, body
    assert await metric(session, stack, 'gateway_pet_cache_lookups_total{result="hit"}') == hits + 1
    assert (await read(session, stack, changed["id"]))[1]["name"] == "Tim"
    assert await metric(session, stack, "gateway_pet_cache_losses_total") == 0
