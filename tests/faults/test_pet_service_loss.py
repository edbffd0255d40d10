"""SIGKILL the pet service under steady load: the gateway answers 503 with the error body
within its deadline (orders too: never "pet not found"), /readyz turns 503, and requests
succeed again within 2 s of the restarted service being up. An order reserves its pet, so each
order of the load is of a pet of its own, never ordered before."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import ClientSession

from petstore_devstack.stack import Stack
from tests.faults.conftest import GRPC_TIMEOUT_SECONDS, STATIC_KEY, running_stack
from tests.faults.load import (
    Request,
    SteadyLoad,
    create_pet,
    create_pets,
    most_requests,
    order_requests,
    wait_for,
)

pytestmark = pytest.mark.mongo

LOAD_SECONDS = 12.0
"""How long the load may last (about 8 s and the restart's start-up): its orders are sized for
the most it can send in this time (at one request per worker per pause), so that no pet is
ordered twice. (Sized when FerretDB's SQLite backend found a pet by its integer id by scanning
the collection, so that every pet slowed every look-up of a pet.)"""


@pytest.fixture
def stack(mongodb_uri: str, log_dir: Path) -> Iterator[Stack]:
    with running_stack(log_dir, mongodb_uri=mongodb_uri) as stack:
        yield stack


async def test_pet_service_killed_and_restarted(stack: Stack, session: ClientSession) -> None:
    base = stack.base_url
    created = await create_pet(session, base, STATIC_KEY)
    pet_id = created.body["id"]
    get_pet = Request("get pet", "GET", f"{base}/pet/{pet_id}")
    # Reads and orders in turn, as many orders as the load can send in LOAD_SECONDS.
    pool = await create_pets(session, base, STATIC_KEY, most_requests(LOAD_SECONDS) // 2 + 1)
    orders = order_requests(base, STATIC_KEY, pool, quantity=1)
    readyz = Request("readyz", "GET", base.removesuffix("/v2") + "/readyz")

    async with SteadyLoad(session, [r for order in orders for r in (get_pet, order)]) as load:
        await asyncio.sleep(0.5)
        pet_process = stack.processes["pet"].process
        assert pet_process is not None
        pet_process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(pet_process.wait)
        killed = time.monotonic()
        await wait_for(session, readyz, 503, within=3)
        await asyncio.sleep(1.5)  # steady load against the missing service
        await asyncio.to_thread(stack.start_process, "pet")  # returns once it reports SERVING
        restarted = time.monotonic()
        await asyncio.sleep(3.0)
    await wait_for(session, readyz, 200, within=3)

    outcomes = load.outcomes
    assert not load.wrapped, f"{load.taken} requests: more than the {2 * len(orders)} sized for"
    assert {o.status for o in outcomes} <= {200, 503}, [o for o in outcomes if o.status not in (200, 503)]
    assert all(o.is_error_body for o in outcomes if o.status == 503)
    assert max(o.elapsed for o in outcomes) <= GRPC_TIMEOUT_SECONDS + 0.5
    # While the service was gone (and before its replacement was started), both kinds of
    # request got 503: an order is never reported as "pet not found".
    down = load.between(killed + 0.1, restarted - 1.0)
    assert {o.request for o in down} == {"get pet", "order"}
    assert {o.status for o in down} == {503}
    # From 2 s after the restarted service was up, everything succeeds again.
    after = load.between(restarted + 2.0, time.monotonic())
    assert after
    assert {o.status for o in after} == {200}
