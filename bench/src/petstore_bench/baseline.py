"""The baseline: a bare aiohttp server answering GET /v2/pet/{petId} with the bench's Pet JSON
from memory (no gRPC, no database, no middlewares), run the way the gateway runs (`web.run_app`
on the default asyncio loop, no access log), so the ratio to it is the cost of everything else.

`python -m petstore_bench.baseline --port N` serves until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from petstore_bench.data import stored_pet

PETS = web.AppKey("pets", dict[int, dict[str, Any]])
DEFAULT_PETS = 100


def pets_in_memory(count: int) -> dict[int, dict[str, Any]]:
    """The bench pets under ids 1..count, as the gateway would answer them."""
    return {index + 1: stored_pet(index + 1, index) for index in range(count)}


def _json(status: int, value: Any) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(value), content_type="application/json")


async def get_pet(request: web.Request) -> web.Response:
    try:
        pet_id = int(request.match_info["petId"])
    except ValueError:
        return _json(400, {"code": 400, "type": "error", "message": "petId must be an integer"})
    pet = request.app[PETS].get(pet_id)
    if pet is None:
        return _json(404, {"code": 404, "type": "error", "message": f"pet {pet_id} not found"})
    return _json(200, pet)


def create_app(pets: Mapping[int, dict[str, Any]]) -> web.Application:
    app = web.Application()
    app[PETS] = dict(pets)
    app.router.add_get("/v2/pet/{petId}", get_pet)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pets", type=int, default=DEFAULT_PETS, help="pets in memory, ids 1..N")
    args = parser.parse_args(argv)
    web.run_app(
        create_app(pets_in_memory(args.pets)), host=args.host, port=args.port, access_log=None, print=None
    )


if __name__ == "__main__":
    main()
