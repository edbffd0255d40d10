"""Restart the database container under steady write load: answers are 200 or a quick 503
with the error body while it is away, the services recover by themselves, and every write
that was answered 200 is still there afterwards."""

from __future__ import annotations

import asyncio
import time

from aiohttp import ClientSession

from tests.e2e.control import ComposeControl, wait_until_serving
from tests.faults.containers.conftest import GRPC_TIMEOUT_SECONDS
from tests.faults.load import Request, SteadyLoad, send, wait_for

RECOVERY_SECONDS = 30.0
"""The services see the database again at their next health check (every 2 s) and the
driver's next server selection; well under this."""


async def test_database_container_restarted(
    compose: ComposeControl, base: str, session: ClientSession, static_key: str
) -> None:
    first = await send(
        session, Request("create", "POST", f"{base}/pet", {"name": "Rex", "photoUrls": []}, static_key)
    )
    assert first.status == 200, first
    get_pet = Request("get pet", "GET", f"{base}/pet/{first.body['id']}")
    writes = [
        Request(f"write {n}", "POST", f"{base}/pet", {"name": f"pet {n}", "photoUrls": []}, static_key)
        for n in range(1000)
    ]
    (database,) = compose.containers("mongo")

    async with SteadyLoad(session, [get_pet, *writes], workers=4) as load:
        await asyncio.sleep(1.5)
        restarting = time.monotonic()
        await asyncio.to_thread(database.restart, timeout=30)  # SIGTERM, wait, start again
        await asyncio.to_thread(wait_until_serving, database)
        await wait_for(session, get_pet, 200, within=RECOVERY_SECONDS)
        recovered = time.monotonic()
        await asyncio.sleep(1.5)

    outcomes = load.outcomes
    assert {o.status for o in outcomes} <= {200, 503}, [o for o in outcomes if o.status not in (200, 503)]
    assert all(o.is_error_body for o in outcomes if o.status == 503)
    assert max(o.elapsed for o in outcomes) <= GRPC_TIMEOUT_SECONDS + 0.5
    print(f"database restart: {round(recovered - restarting, 1)} s until reads succeeded again")
    # Nothing acknowledged was lost.
    acknowledged = [o.body["id"] for o in outcomes if o.request.startswith("write") and o.status == 200]
    assert len(acknowledged) > 10
    for pet_id in acknowledged:
        reply = await send(session, Request("read back", "GET", f"{base}/pet/{pet_id}"))
        assert reply.status == 200, (pet_id, reply)
