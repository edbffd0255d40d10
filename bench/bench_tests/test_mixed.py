"""The mixed scenario's clients: stale reads counted, errors sorted, latencies summarised."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from petstore_bench import mixed

ETAG_TAIL = "0123456789abcdef"


def fake_gateway(*, stale: bool = False, put_status: int = 200) -> web.Application:
    """PUT /v2/pet bumps the pet's version; GET answers it (or, `stale`, the one before)."""
    versions: dict[int, int] = {}

    async def put(request: web.Request) -> web.Response:
        pet_id = int((await request.json())["id"])
        versions[pet_id] = versions.get(pet_id, 1) + 1
        return web.json_response({}, status=put_status, headers={"ETag": f'"{versions[pet_id]}-{ETAG_TAIL}"'})

    async def get(request: web.Request) -> web.Response:
        version = versions.get(int(request.match_info["id"]), 1)
        if stale and version > 1:
            version -= 1
        return web.json_response({}, headers={"ETag": f'"{version}-{ETAG_TAIL}"'})

    app = web.Application()
    app.router.add_put("/v2/pet", put)
    app.router.add_get("/v2/pet/{id}", get)
    return app


async def serve(app: web.Application) -> AsyncIterator[str]:
    async with TestServer(app, host="127.0.0.1") as server:
        yield str(server.make_url("/v2"))


@pytest.fixture
async def coherent() -> AsyncIterator[str]:
    async for url in serve(fake_gateway()):
        yield url


@pytest.fixture
async def stale() -> AsyncIterator[str]:
    async for url in serve(fake_gateway(stale=True)):
        yield url


@pytest.fixture
async def refusing() -> AsyncIterator[str]:
    async for url in serve(fake_gateway(put_status=412)):
        yield url


PETS = {1: "a", 2: "b"}


async def test_a_coherent_gateway_has_no_stale_reads(coherent: str) -> None:
    found = await mixed.run_mixed(coherent, "key", PETS, clients=2, seconds=0.3, write_share=0.3)
    assert found.writes > 0
    assert found.reads > 0
    assert (found.stale_reads, found.errors) == (0, 0)
    result = found.to_wrk_result()
    assert result.requests == found.reads + found.writes
    assert result.stale_reads == 0
    assert result.latency_us.p99 >= result.latency_us.p50 > 0


async def test_reads_older_than_an_acknowledged_write_are_stale(stale: str) -> None:
    found = await mixed.run_mixed(stale, "key", PETS, clients=2, seconds=0.3, write_share=0.3)
    assert found.stale_reads > 0
    assert found.stale_examples
    assert found.to_wrk_result().stale_reads == found.stale_reads


async def test_refused_writes_are_status_errors(refusing: str) -> None:
    found = await mixed.run_mixed(refusing, "key", PETS, clients=1, seconds=0.2, write_share=0.5)
    assert found.status_errors > 0
    result = found.to_wrk_result()
    assert result.errors.status == found.status_errors
    assert result.successes == found.reads + found.writes


async def test_no_answer_is_a_socket_error() -> None:
    found = await mixed.run_mixed("http://127.0.0.1:9/v2", "key", PETS, clients=1, seconds=0.1)
    assert found.socket_errors > 0
    assert found.to_wrk_result().errors.read == found.socket_errors
    assert found.to_wrk_result().requests == 0


def test_percentiles_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    summary = mixed.latency(values)
    assert (summary.min, summary.p50, summary.p99, summary.max) == (1, 50, 99, 100)
    assert mixed.latency([]).p99 == 0
