"""SIGKILL every pet-service container under steady load: the gateway answers 503 with the
error body within its deadline (orders too: never "pet not found"), /readyz turns 503, and
requests succeed again within 2 s of the restarted containers serving. An order reserves its
pet, so each order of the load is of a pet of its own, never ordered before."""

from __future__ import annotations

import asyncio
import time

from aiohttp import ClientSession

from tests.e2e.control import ComposeControl, wait_until_serving
from tests.faults.containers.conftest import GRPC_TIMEOUT_SECONDS
from tests.faults.load import Request, SteadyLoad, create_pets, most_requests, order_requests, send, wait_for

ORDER_SECONDS = 8.0
"""The load orders pets of a pool, each once, then only reads: the pool lasts at least this long
(at one request per worker per pause, the most the load can send), past the containers' kill
(after 1 s) and the outage it watches (readiness within 3 s, then 2 s). Not longer: on the
compose stack's FerretDB stand-in every pet slows every look-up of a pet."""


async def test_pet_service_containers_killed_and_restarted(
    compose: ComposeControl, base: str, session: ClientSession, static_key: str
) -> None:
    created = await send(
        session, Request("create", "POST", f"{base}/pet", {"name": "Rex", "photoUrls": []}, static_key)
    )
    assert created.status == 200, created
    pet_id = created.body["id"]
    get_pet = Request("get pet", "GET", f"{base}/pet/{pet_id}")
    # Reads and orders in turn while the pool lasts (at least ORDER_SECONDS), then reads.
    pool = await create_pets(session, base, static_key, most_requests(ORDER_SECONDS) // 2 + 1)
    orders = order_requests(base, static_key, pool, quantity=1)
    readyz = Request("readyz", "GET", base.removesuffix("/v2") + "/readyz")
    replicas = compose.containers("pet-service")
    assert len(replicas) == 2

    reads_then = [get_pet]
    async with SteadyLoad(
        session, [r for order in orders for r in (get_pet, order)], then=reads_then
    ) as load:
        await asyncio.sleep(1.0)
        for container in replicas:
            await asyncio.to_thread(container.kill)  # SIGKILL: no graceful stop
        killed = time.monotonic()
        await wait_for(session, readyz, 503, within=3)
        await asyncio.sleep(2.0)  # steady load against the missing service
        stopped_until = time.monotonic()
        for container in replicas:
            await asyncio.to_thread(container.start)
        for container in replicas:
            await asyncio.to_thread(wait_until_serving, container)
        restarted = time.monotonic()
        await asyncio.sleep(3.0)
    await wait_for(session, readyz, 200, within=3)

    outcomes = load.outcomes
    assert {o.status for o in outcomes} <= {200, 503}, [o for o in outcomes if o.status not in (200, 503)]
    assert all(o.is_error_body for o in outcomes if o.status == 503)
    assert max(o.elapsed for o in outcomes) <= GRPC_TIMEOUT_SECONDS + 0.5
    # While no replica ran, both kinds of request got 503: an order is never "pet not found".
    down = load.between(killed + 0.1, stopped_until)
    assert {o.request for o in down} == {"get pet", "order"}
    assert {o.status for o in down} == {503}
    # From 2 s after the restarted containers serve, everything succeeds again.
    after = load.between(restarted + 2.0, time.monotonic())
    assert after
    assert {o.status for o in after} == {200}, [(round(o.started - restarted, 2), o.status) for o in after]
