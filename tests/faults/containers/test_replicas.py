"""Two replicas of each gRPC service behind one name: under load both replicas of every
service serve calls (their own logs say so), and SIGTERM to one replica at a time, each
started again before the next, loses no request: in-flight calls finish, the callers'
round_robin channels leave a replica that reports NOT_SERVING and take it back once it
serves again. An order reserves its pet, so each order of the load is of a pet of its own,
never ordered before, from a pool; once it is used, an order read takes its turn."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from aiohttp import ClientSession

from petstore.pet.v1 import pet_service_pb2
from tests.e2e.control import ComposeControl, wait_until_serving
from tests.faults.containers.conftest import SERVICES, rpc_calls
from tests.faults.load import Request, SteadyLoad, create_pets, most_requests, order_requests, send

BACK_IN_TURN_SECONDS = 15.0
"""A restarted replica gets calls again within this (reconnect backoff is at most 1 s)."""
_PETS = pet_service_pb2.DESCRIPTOR.services_by_name["PetService"]
ORDER_SERVICE_CALLS = frozenset(
    f"/{_PETS.full_name}/{name}" for name in ("FindExistingPets", "ReservePet", "ReleasePet", "SellPet")
)
"""The pet service's methods only the order service calls: a restarted pet replica that has
served one is back in the order service's turn too, not only in the gateway's. The two reconnect
on their own: the order service's channel may find the replica's new address only when one of its
connections fails or ages out (GRPC_MAX_CONNECTION_AGE_SECONDS), seconds after the gateway's, and
stopping the other pet replica before then left it no replica at all (an order got 503)."""
ORDER_SECONDS = 10.0
"""The load orders pets of a pool, each once (an order reserves its pet), for at least this long
(at one request per worker per pause, the most it can send), then reads an order instead, which
still reaches every order-service replica: the pet-service replicas, restarted first, are
restarted under orders. Not longer: on the compose stack's FerretDB stand-in every pet slows every
look-up of a pet."""


async def _traffic(
    session: ClientSession, base: str, static_key: str, unique: str
) -> tuple[list[Request], list[Request]]:
    """Requests that reach every service, in turn: a pet read, an order (order, then pet), a user
    read; each order of a pet of its own, as many as the load can send in ORDER_SECONDS. Then
    the same with an order read (order service only) in place of the order."""
    pet = await send(
        session, Request("create pet", "POST", f"{base}/pet", {"name": "Rex", "photoUrls": []}, static_key)
    )
    assert pet.status == 200, pet
    username = f"replica{unique}"
    account = {"username": username, "email": f"{username}@example.com", "password": "pw-12345678"}
    user = await send(session, Request("create user", "POST", f"{base}/user", account))
    assert user.status == 200, user
    get_pet = Request("get pet", "GET", f"{base}/pet/{pet.body['id']}")
    get_user = Request("get user", "GET", f"{base}/user/{username}")
    # Four at a time: after the whole e2e suite, FerretDB (compose's stand-in) scans a large pet
    # table on every create, and sixteen queued at once could outlast a call's 5 s deadline.
    pool = await create_pets(session, base, static_key, most_requests(ORDER_SECONDS) // 3 + 2, at_once=4)
    first, *orders = order_requests(base, static_key, pool)
    placed = await send(session, first)
    assert placed.status == 200, placed
    get_order = Request("get order", "GET", f"{base}/store/order/{placed.body['id']}", api_key=static_key)
    return [r for order in orders for r in (get_pet, order, get_user)], [get_pet, get_order, get_user]


async def _wait_for_calls(
    container: Any,
    since: float,
    within: float,
    *,
    of: frozenset[str] | None = None,
    until: Callable[[], bool] = lambda: False,
) -> None:
    """Until `container` has served a call since `since` (one of the methods `of`, when given),
    or `until()` says no such call is coming any more."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        calls = await asyncio.to_thread(rpc_calls, container, since)
        if sum(count for method, count in calls.items() if of is None or method in of) or until():
            return
        await asyncio.sleep(0.5)
    which = f" of {sorted(of)}" if of else ""
    raise AssertionError(f"{container.name} served no call{which} within {within}s of serving again")


async def test_both_replicas_of_each_service_serve_calls(
    compose: ComposeControl, base: str, session: ClientSession, static_key: str, unique: str
) -> None:
    orders, reads = await _traffic(session, base, static_key, unique)
    started = time.time()
    async with SteadyLoad(session, orders, workers=4, then=reads) as load:
        await asyncio.sleep(4.0)
    assert {o.status for o in load.outcomes} == {200}
    for service in SERVICES:
        replicas = compose.containers(service)
        assert len(replicas) == 2, service
        served = {c.name: sum(rpc_calls(c, started).values()) for c in replicas}
        print(f"{service}: calls per replica {served}")
        assert all(served.values()), f"{service}: a replica served no call: {served}"
        # round_robin: the two are near even (the order service's pet checks count for pet too).
        low, high = sorted(served.values())
        assert low >= high / 3, f"{service}: unbalanced {served}"


async def test_restarting_one_replica_at_a_time_loses_no_request(
    compose: ComposeControl, base: str, session: ClientSession, static_key: str, unique: str
) -> None:
    orders, reads = await _traffic(session, base, static_key, unique)
    events: list[tuple[float, str]] = []
    async with SteadyLoad(session, orders, workers=4, then=reads) as load:
        await asyncio.sleep(1.0)
        for service in SERVICES:
            for container in compose.containers(service):
                # SIGTERM: NOT_SERVING, in-flight calls finish (GRACE_SECONDS), exit 0.
                events.append((time.monotonic(), f"stop {container.name}"))
                await asyncio.to_thread(container.stop, timeout=30)
                container.reload()
                assert container.attrs["State"]["ExitCode"] == 0, f"{container.name} did not stop cleanly"
                events.append((time.monotonic(), f"start {container.name}"))
                await asyncio.to_thread(container.start)
                await asyncio.to_thread(wait_until_serving, container)
                events.append((time.monotonic(), f"serving {container.name}"))
                serving = time.time()
                await _wait_for_calls(container, serving, BACK_IN_TURN_SECONDS)
                if service == "pet-service":  # while orders still come, in the order service's turn too
                    await _wait_for_calls(
                        container,
                        serving,
                        BACK_IN_TURN_SECONDS,
                        of=ORDER_SERVICE_CALLS,
                        until=lambda: load.taken >= len(orders),
                    )
                events.append((time.monotonic(), f"in turn {container.name}"))
        await asyncio.sleep(1.0)

    outcomes = load.outcomes
    failed = [o for o in outcomes if o.status != 200]
    print(f"{len(outcomes)} requests during {len(events) // 4} replica restarts, {len(failed)} not 200")
    assert len(events) == 4 * 2 * len(SERVICES)
    assert len(outcomes) > 100
    assert failed == [], [(_after(events, o.started), o.request, o.status, o.body) for o in failed[:10]]


def _after(events: list[tuple[float, str]], moment: float) -> str:
    """`moment` as seconds after the last event before it."""
    before = [(at, what) for at, what in events if at <= moment] or [(moment, "start")]
    at, what = before[-1]
    return f"{moment - at:.2f}s after {what}"
