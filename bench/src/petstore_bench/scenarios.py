"""What the benchmark drives: one wrk Lua script per scenario, the same load for each."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    """Short name, used on the command line and in the JSON."""
    title: str
    script: str
    """The Lua script in lua/ (without .lua)."""
    measures: str
    """One line for the README and --help."""
    driver: str = "wrk"
    """"wrk" (the Lua script drives it) or "mixed" (petstore_bench.mixed's aiohttp clients)."""
    orders_pets: bool = False
    """Each request orders (so reserves) a pet: the runner loads a pool of available pets for it
    first, and hands every wrk run its own unused part (petstore_bench.orderpool)."""


BASELINE = Scenario(
    "baseline",
    "baseline GET pet JSON",
    "get_pet_json",
    "a bare aiohttp server answering the same Pet JSON from memory: no middlewares, gRPC or database",
)

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "get_pet_json",
        "GET /v2/pet/{id} JSON",
        "get_pet_json",
        "read path: gateway middlewares + one GetPet call + one MongoDB find + JSON encoding",
    ),
    Scenario(
        "get_pet_hot",
        "GET /v2/pet/{id} JSON, one id",
        "get_pet_hot",
        "the same read, every request for the same pet: the hot path, one cache entry",
    ),
    Scenario(
        "get_pet_random",
        "GET /v2/pet/{id} JSON, random ids",
        "get_pet_random",
        "the same read, each for a pet drawn at random from all loaded (--pets): a working set,"
        " not one hot id",
    ),
    Scenario(
        "get_pet_304",
        "GET /v2/pet/{id} If-None-Match (304)",
        "get_pet_304",
        "revalidation: random pets with If-None-Match: <their current ETag>, each answered 304"
        " without a body; any other status counts as an error",
    ),
    Scenario(
        "get_pet_xml",
        "GET /v2/pet/{id} XML",
        "get_pet_xml",
        "the same read answered as XML (Accept: application/xml): the XML encoder's cost",
    ),
    Scenario(
        "post_pet",
        "POST /v2/pet",
        "post_pet",
        "write path: api_key check, JSON decoding and validation, CreatePet (id allocation + insert)",
    ),
    Scenario(
        "post_order",
        "POST /v2/store/order",
        "post_order",
        "an order and its pet's reservation, each for a pet nobody ordered yet (a pool loaded"
        " first): gateway -> order service (order stored) -> ReservePet on the pet service (the pet"
        " pending, held by the order) -> order settled",
        orders_pets=True,
    ),
    Scenario(
        "login",
        "GET /v2/user/login",
        "login",
        "one argon2 verification per request in the user service, plus a signed session token",
    ),
    Scenario(
        "get_pet_mixed",
        "GET /v2/pet/{id} + 5% PUT (mixed)",
        "",
        "random reads with 5% PUT writes mixed in, one aiohttp client per connection, counting stale"
        " reads (older than the client's own acknowledged write); always run last: it changes ETags",
        driver="mixed",
    ),
)
LAST = "get_pet_mixed"
"""Its writes change the pets' ETags (get_pet_304 needs the loaded ones): it runs after the others."""

BY_KEY = {scenario.key: scenario for scenario in SCENARIOS}
