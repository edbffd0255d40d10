"""The baseline server answers the bench's pets as the gateway would."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from petstore_bench.baseline import create_app, pets_in_memory
from petstore_bench.data import stored_pet

Client = TestClient[web.Request, web.Application]


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with TestClient(TestServer(create_app(pets_in_memory(10)))) as served:
        yield served


async def test_answers_the_stored_pet_as_json(client: Client) -> None:
    response = await client.get("/v2/pet/3")
    assert response.status == 200
    assert response.content_type == "application/json"
    body = await response.read()
    assert orjson.loads(body) == stored_pet(3, 2)
    assert body == orjson.dumps(stored_pet(3, 2))  # byte for byte, keys in the gateway's order


async def test_unknown_pet_is_404(client: Client) -> None:
    response = await client.get("/v2/pet/11")
    assert response.status == 404
    assert await response.json() == {"code": 404, "type": "error", "message": "pet 11 not found"}


async def test_a_bad_id_is_400(client: Client) -> None:
    response = await client.get("/v2/pet/abc")
    assert response.status == 400
    assert (await response.json())["code"] == 400


def test_pets_are_numbered_from_one() -> None:
    pets = pets_in_memory(3)
    assert list(pets) == [1, 2, 3]
    assert pets[1]["id"] == 1
