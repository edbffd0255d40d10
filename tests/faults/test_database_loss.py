"""SIGKILL the database server under steady load and start it again on the same data: the
services answer 503 quickly while it is gone, recover by themselves, and every write that
was answered 200 is still there afterwards. Readiness names every service that lost it within a
second, and routing follows it back. An Idempotency-Key whose attempt died with the database
(frozen with SIGSTOP, or killed) at its claim, its work or its abandon is free again within a
second of the database answering, and its retry has exactly one effect. The frozen abandon is
thawed only after the service logged that it gave up, so the lease is what frees the key.

And a crash run with keys: eight writers, each retrying one create after another under its own
Idempotency-Key until it is 200, while the database is killed and restarted and then frozen
past the gateway's deadline and thawed. Nothing acknowledged is lost, nothing is made twice (one
pet or order per key, with the id its 200 gave), and no key answers 409 more than a second
(plus a stated margin) after its attempt died or the database answered again.

An order reserves its pet and a pet is ordered once (docs/sale.md): every order here is of a pet
nobody ordered before, so a 409 can only be its key's."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from petstore_devstack.stack import Stack
from tests.faults.conftest import FAULT_ENV, STATIC_KEY, Database, running_stack
from tests.faults.load import Outcome, Request, SteadyLoad, create_pet, create_pets, send, wait_for

# The database is this test's own FerretDB (built by `make test` before pytest runs), which
# it kills: a server given by MONGODB_URI is not ours to kill.
pytestmark = pytest.mark.mongo

SERVER_SELECTION_SECONDS = int(FAULT_ENV["MONGODB_TIMEOUT_MS"]) / 1000
"""How long a service waits for the database before answering UNAVAILABLE."""
RECOVERY_SECONDS = 15.0
"""Services notice the database is back at their next server selection (well under this)."""


@pytest.fixture
def stack(database: Database, log_dir: Path) -> Iterator[Stack]:
    with running_stack(log_dir, mongodb_uri=database.uri) as stack:
        yield stack


async def test_database_killed_and_restarted(
    stack: Stack, database: Database, session: ClientSession
) -> None:
    base = stack.base_url
    first = await create_pet(session, base, STATIC_KEY)
    get_pet = Request("get pet", "GET", f"{base}/pet/{first.body['id']}")
    writes = [
        Request(f"write {n}", "POST", f"{base}/pet", {"name": f"pet {n}", "photoUrls": []}, STATIC_KEY)
        for n in range(1000)
    ]
    readyz = Request("readyz", "GET", base.removesuffix("/v2") + "/readyz")

    async with SteadyLoad(session, [get_pet, *writes], workers=4) as load:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(database.kill)
        killed = time.monotonic()
        await wait_for(session, readyz, 503, within=6)
        await asyncio.sleep(3.0)
        down_until = time.monotonic()
        await asyncio.to_thread(database.start)
        await wait_for(session, get_pet, 200, within=RECOVERY_SECONDS)
        await asyncio.sleep(1.0)
    await wait_for(session, readyz, 200, within=RECOVERY_SECONDS)

    outcomes = load.outcomes
    assert {o.status for o in outcomes} <= {200, 503}, [o for o in outcomes if o.status not in (200, 503)]
    assert all(o.is_error_body for o in outcomes if o.status == 503)
    # With the database gone, answers are quick 503s, not hangs. (A request sent less than a
    # server-selection timeout before the restart may rightly succeed: the window ends earlier.)
    down = load.between(killed + 1.0, down_until - SERVER_SELECTION_SECONDS - 0.1)
    assert down
    assert {o.status for o in down} == {503}, [(round(o.started - killed, 2), o.status) for o in down]
    assert max(o.elapsed for o in down) < 2.0
    # Nothing acknowledged was lost.
    acknowledged = [o.body["id"] for o in outcomes if o.request.startswith("write") and o.status == 200]
    assert len(acknowledged) > 10
    for pet_id in acknowledged:
        reply = await send(session, Request("read back", "GET", f"{base}/pet/{pet_id}"))
        assert reply.status == 200, (pet_id, reply)


# --- readiness -------------------------------------------------------------------------------

READINESS_LAG_SECONDS = 1.0
"""Readiness and routing follow a service's health within this."""


async def test_readiness_and_routing_follow_the_database(
    stack: Stack, database: Database, session: ClientSession
) -> None:
    base = stack.base_url
    readyz = Request("readyz", "GET", base.removesuffix("/v2") + "/readyz")
    pet = await send(
        session, Request("pet", "POST", f"{base}/pet", {"name": "Rex", "photoUrls": []}, STATIC_KEY)
    )
    order = await send(
        session, Request("order", "POST", f"{base}/store/order", {"petId": pet.body["id"]}, STATIC_KEY)
    )
    user = await send(
        session,
        Request(
            "user",
            "POST",
            f"{base}/user",
            {"username": "ada", "email": "ada@example.com", "password": "pass-1234"},
        ),
    )
    assert (pet.status, order.status, user.status) == (200, 200, 200), (pet, order, user)
    probes = {
        "pet": Request("pet", "GET", f"{base}/pet/{pet.body['id']}"),
        "order": Request("order", "GET", f"{base}/store/order/{order.body['id']}", api_key=STATIC_KEY),
        "user": Request("user", "GET", f"{base}/user/ada"),
    }

    async def watch(until_status: int, within: float) -> tuple[dict[str, float], dict[str, float]]:
        """Until every probe answered `until_status` and /readyz agreed: when each probe first
        did, and when /readyz first named (503) or stopped naming (200) its service (times of
        the answers; each polled on its own every 50 ms)."""
        answered: dict[str, float] = {}
        readiness: dict[str, float] = {}
        deadline = time.monotonic() + within

        async def poll(name: str, request: Request) -> None:
            while name not in answered:
                assert time.monotonic() < deadline, (name, answered, readiness)
                reply = await send(session, request)
                if reply.status == until_status:
                    answered[name] = reply.started + reply.elapsed
                await asyncio.sleep(0.05)

        async def poll_readiness() -> None:
            while len(readiness) < len(probes):
                assert time.monotonic() < deadline, (answered, readiness)
                ready = await send(session, readyz)
                for name in probes:
                    named = isinstance(ready.body, dict) and name in str(ready.body.get("message"))
                    if named == (until_status == 503):
                        readiness.setdefault(name, ready.started + ready.elapsed)
                await asyncio.sleep(0.05)

        await asyncio.gather(poll_readiness(), *(poll(name, request) for name, request in probes.items()))
        return answered, readiness

    await asyncio.to_thread(database.kill)
    failing, named = await watch(503, within=10)
    for name in probes:  # /readyz names each service within a second of its first 503
        assert named[name] - failing[name] < READINESS_LAG_SECONDS, (name, failing, named)
    final = await send(session, readyz)
    assert (final.status, final.headers.get("Retry-After")) == (503, "1"), final
    assert all(name in final.body["message"] for name in probes), final.body

    await asyncio.to_thread(database.start)
    serving, unnamed = await watch(200, within=RECOVERY_SECONDS)
    for name in probes:  # calls reach a service within a second of its health coming back
        assert serving[name] - unnamed[name] < READINESS_LAG_SECONDS, (name, serving, unnamed)


NAMED_AFTER_KILL_SECONDS = 1.25
"""With no call to find it out, /readyz names every service this soon after the database is
killed: the driver's heartbeat (every 0.5 s) fails at once and turns each service NOT_SERVING."""


async def test_readiness_hears_of_a_killed_database_with_no_call_made(
    stack: Stack, database: Database, session: ClientSession
) -> None:
    readyz = Request("readyz", "GET", stack.base_url.removesuffix("/v2") + "/readyz")
    await wait_for(session, readyz, 200, within=RECOVERY_SECONDS)
    await asyncio.to_thread(database.kill)
    killed = time.monotonic()
    while True:
        ready = await send(session, readyz)
        message = str(ready.body.get("message")) if isinstance(ready.body, dict) else ""
        if all(name in message for name in ("pet", "order", "user")):
            break
        assert time.monotonic() - killed < NAMED_AFTER_KILL_SECONDS, ready
        await asyncio.sleep(0.05)
    assert ready.started + ready.elapsed - killed < NAMED_AFTER_KILL_SECONDS


# --- Idempotency-Keys of attempts that died with the database --------------------------------

FREE_WITHIN_SECONDS = 1.0
"""A key whose attempt died is free again this long after the database answers at most."""


def keyed(request: Request, key: str) -> Request:
    return dataclasses.replace(request, headers=(("Idempotency-Key", key),))


async def retry_until_done(session: ClientSession, request: Request, within: float) -> list[Outcome]:
    """Send `request` again and again (as a client with a retry budget would) until it is 200."""
    outcomes: list[Outcome] = []
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        outcome = await send(session, request)
        outcomes.append(outcome)
        assert outcome.status in (200, 409, 503), outcome
        if outcome.status in (409, 503):
            assert outcome.headers.get("Retry-After") == "1", outcome
        if outcome.status == 200:
            return outcomes
        await asyncio.sleep(0.05)
    raise AssertionError(f"{request.name} not 200 within {within}s: {outcomes[-5:]}")


def blocked_after(outcomes: list[Outcome], moment: float) -> float:
    """How long after `moment` the key still answered 409 (0 when it never did after it)."""
    return max((o.started - moment for o in outcomes if o.status == 409), default=0.0)


async def pets_named(session: ClientSession, base: str, name: str) -> int:
    found = await send(
        session, Request("find", "GET", f"{base}/pet/findByStatus?status=available&limit=1000")
    )
    assert found.status == 200, found
    return sum(1 for pet in found.body if pet["name"] == name)


async def warm_up(session: ClientSession, base: str) -> None:
    """One keyed create first, so the pet service's periodic purge of records is not due and
    the next claim is the first thing to meet the database."""
    warm = Request("warm", "POST", f"{base}/pet", {"name": "warm", "photoUrls": []}, STATIC_KEY)
    reply = await send(session, keyed(warm, "warm-up"))
    assert reply.status == 200, reply


async def pet_after_an_order(session: ClientSession, base: str) -> Outcome:
    """A pet nobody has ordered, once another pet was ordered without a key: the order service's
    channel to the pet service is connected before the test stops the pet service. (A first
    connection to a stopped pet service fails its reservation as UNAVAILABLE within half a
    second; a connected one waits for the deadline, which leaves the test time to act while the
    attempt is at work.) The pet of that order is pending now, so the test's order is of another."""
    ordered = await create_pet(session, base, STATIC_KEY, "Ordered")
    order = await send(
        session, Request("order", "POST", f"{base}/store/order", {"petId": ordered.body["id"]}, STATIC_KEY)
    )
    assert order.status == 200, order
    return await create_pet(session, base, STATIC_KEY)


async def test_a_key_whose_claim_met_a_frozen_database_is_free_when_it_answers(
    stack: Stack, database: Database, session: ClientSession
) -> None:
    base = stack.base_url
    await warm_up(session, base)
    create = keyed(
        Request(
            "create",
            "POST",
            f"{base}/pet",
            {"name": "Frozen", "photoUrls": [], "status": "available"},
            STATIC_KEY,
        ),
        "frozen-claim",
    )
    database.freeze()
    try:
        died = await send(session, create)  # the claim's insert waits on the frozen database
        # Cancelled at the gateway's deadline.
        assert (died.status, died.headers.get("Retry-After")) == (503, "1"), died
        await asyncio.sleep(0.5)
    finally:
        database.thaw()
    thawed = time.monotonic()

    outcomes = await retry_until_done(session, create, within=RECOVERY_SECONDS)
    assert blocked_after(outcomes, thawed) < FREE_WITHIN_SECONDS, outcomes
    assert await pets_named(session, base, "Frozen") == 1
    assert (await send(session, create)).headers.get("Idempotent-Replayed") == "true"


async def test_a_key_whose_claim_met_a_killed_database_is_free_when_it_is_back(
    stack: Stack, database: Database, session: ClientSession
) -> None:
    base = stack.base_url
    await warm_up(session, base)
    create = keyed(
        Request(
            "create",
            "POST",
            f"{base}/pet",
            {"name": "Lost", "photoUrls": [], "status": "available"},
            STATIC_KEY,
        ),
        "killed-claim",
    )
    database.freeze()
    attempt = asyncio.create_task(send(session, create))  # its insert waits on the frozen database
    await asyncio.sleep(0.5)
    await asyncio.to_thread(database.kill)  # the insert is lost, and so is the abandon
    died = await attempt
    assert died.status == 503, died
    await asyncio.to_thread(database.start)
    back = time.monotonic()

    outcomes = await retry_until_done(session, create, within=RECOVERY_SECONDS)
    assert blocked_after(outcomes, back) < FREE_WITHIN_SECONDS, outcomes
    assert await pets_named(session, base, "Lost") == 1


async def test_a_key_whose_work_and_abandon_met_a_killed_database_is_free_when_it_is_back(
    stack: Stack, database: Database, session: ClientSession
) -> None:
    base = stack.base_url
    pet = await pet_after_an_order(session, base)
    create = keyed(
        Request("order", "POST", f"{base}/store/order", {"petId": pet.body["id"]}, STATIC_KEY), "killed-work"
    )
    async with attempt_at_work(stack, session, create) as attempt:
        await asyncio.to_thread(database.kill)
        died = await attempt
        assert died.status == 503, died  # its work, and then its abandon, found no database
    await asyncio.to_thread(database.start)

    await free_at_once_with_one_effect(session, create, since=time.monotonic())


@contextlib.asynccontextmanager
async def attempt_at_work(
    stack: Stack, session: ClientSession, create: Request
) -> AsyncIterator[asyncio.Task[Outcome]]:
    """An attempt under `create`'s key that has claimed it and is at work: the pet service is
    stopped, so the order's reservation of its pet hangs until the block ends."""
    stack.signal("pet", signal.SIGSTOP)
    try:
        attempt = asyncio.create_task(send(session, create))
        await asyncio.sleep(0.3)
        twin = await send(session, create)
        assert twin.status == 409, twin  # the claim is in, and its lease is held
        yield attempt
    finally:
        stack.signal("pet", signal.SIGCONT)


async def free_at_once_with_one_effect(session: ClientSession, create: Request, *, since: float) -> int:
    """`create`'s retries stop answering 409 within a second of `since` and succeed, and a
    replay answers the same order: the id of that order."""
    outcomes = await retry_until_done(session, create, within=RECOVERY_SECONDS)
    assert blocked_after(outcomes, since) < FREE_WITHIN_SECONDS, outcomes
    order_id: int = outcomes[-1].body["id"]
    replay = await send(session, create)
    assert (replay.status, replay.headers.get("Idempotent-Replayed")) == (200, "true"), replay
    assert replay.body["id"] == order_id
    return order_id


SETTLE_FAILED = b"could not settle an idempotency record"
"""What a service logs when the abandon of a dead attempt could not reach the database."""
SETTLE_GIVES_UP_SECONDS = 20.0
"""A write to a frozen database fails by the driver's socket timeout (10 s in these stacks),
or sooner when the driver has already found the server gone: this bounds both, with margin."""


def holds(path: Path, line: bytes) -> bool:
    return path.exists() and line in path.read_bytes()


async def logged(path: Path, line: bytes, within: float) -> None:
    """Wait until the process log at `path` holds `line`."""
    deadline = time.monotonic() + within
    while not await asyncio.to_thread(holds, path, line):
        assert time.monotonic() < deadline, f"{path.name} did not log {line!r} within {within}s"
        await asyncio.sleep(0.1)


async def test_a_key_whose_work_and_abandon_met_a_frozen_database_is_free_when_it_answers(
    stack: Stack, database: Database, session: ClientSession, log_dir: Path
) -> None:
    base = stack.base_url
    pet = await pet_after_an_order(session, base)
    create = keyed(
        Request("order", "POST", f"{base}/store/order", {"petId": pet.body["id"], "quantity": 2}, STATIC_KEY),
        "frozen-work",
    )
    async with attempt_at_work(stack, session, create) as attempt:
        database.freeze()  # its renewals now hang, and so will its abandon
        try:
            died = await attempt  # the gateway's deadline ends it
            assert (died.status, died.headers.get("Retry-After")) == (503, "1"), died
            # Thawed only once the abandon has given up, so what frees the key is its lease
            # running out, not an abandon landing late.
            await logged(log_dir / "order.log", SETTLE_FAILED, within=SETTLE_GIVES_UP_SECONDS)
        finally:
            database.thaw()

    order_id = await free_at_once_with_one_effect(session, create, since=time.monotonic())
    orders = await send(
        session,
        Request("orders", "GET", f"{base}/store/order?petId={pet.body['id']}&limit=1000", api_key=STATIC_KEY),
    )
    assert orders.status == 200, orders
    # The pet's only order is the key's, with the id its 200 gave.
    assert [(order["id"], order["quantity"]) for order in orders.body] == [(order_id, 2)]


# --- a crash run under load with Idempotency-Keys --------------------------------------------

WRITERS = 8
"""Clients writing at once, half creating pets and half orders, each key after key."""
KEY_BUDGET_SECONDS = RECOVERY_SECONDS
"""How long a writer retries one key: longer than any outage this run makes."""
CRASH_MARGIN_SECONDS = 0.5
"""On top of FREE_WITHIN_SECONDS: a service may learn that an attempt died (its caller's
deadline, crossing two busy processes) a little after the client got the 503, and the
client's clock starts at the 503. Half a second covers that on a 2-core machine shared with
CI; a 30 s lease misses it by tens of seconds."""
POOL_PETS = 600
"""Pets for the order writers' keys, one each (an order reserves its pet): about ten times the
60 to 90 keys the four order writers got through in a run on two shared cores. A writer that
finds none left fails the run, saying so. (Sized when FerretDB's SQLite backend found a document
by an integer _id by scanning its collection, so that every pet slowed every look-up.)"""


@dataclass
class PetPool:
    """Pets nobody has ordered, one for each key that places an order: the same pet every time
    that key is sent (its retries, its replay), and never the pet of another key."""

    free: list[int]
    given: dict[str, int] = field(default_factory=dict)

    def pet_for(self, key: str) -> int:
        if key not in self.given:
            assert self.free, f"all {len(self.given)} pets were ordered: POOL_PETS is too small for this run"
            self.given[key] = self.free.pop()
        return self.given[key]


def writer_request(base: str, writer: int, number: int, pets: PetPool) -> Request:
    """The writer's `number`th create, under a key of its own: pets are named after their key,
    and orders carry a quantity no other key uses, so each can be counted afterwards. Each order
    is of a pet of its own from `pets` (an order reserves its pet)."""
    key = f"crash-{writer}-{number}"
    if writer % 2 == 0:
        body: dict[str, object] = {"name": key, "photoUrls": [], "status": "available"}
        return keyed(Request(key, "POST", f"{base}/pet", body, STATIC_KEY), key)
    body = {"petId": pets.pet_for(key), "quantity": writer * 100_000 + number + 1}
    return keyed(Request(key, "POST", f"{base}/store/order", body, STATIC_KEY), key)


def order_key(order: dict[str, Any]) -> str:
    """The key an order was placed under, read back from its quantity (see writer_request)."""
    quantity = order["quantity"]
    return f"crash-{quantity // 100_000}-{quantity % 100_000 - 1}"


async def keyed_writer(
    session: ClientSession,
    make: Callable[[int], Request],
    answers: dict[str, list[Outcome]],
    stop: asyncio.Event,
    *,
    pause_seconds: float = 0.0,
) -> None:
    """Create one resource after another until `stop`, each retried under its key until 200,
    `pause_seconds` between keys."""
    number = 0
    while not stop.is_set():
        request = make(number)
        outcomes = answers.setdefault(request.name, [])
        deadline = time.monotonic() + KEY_BUDGET_SECONDS
        while True:
            outcome = await send(session, request)
            outcomes.append(outcome)
            if outcome.status == 200:
                break
            assert time.monotonic() < deadline, f"{request.name} not 200 in its budget: {said(outcomes[-5:])}"
            await asyncio.sleep(0.05)
        number += 1
        await asyncio.sleep(pause_seconds)


def said(outcomes: list[Outcome]) -> str:
    """Each answer's status and message, for a failure to read at a glance."""
    return ", ".join(
        f"{o.status} {o.body.get('message') if isinstance(o.body, dict) else ''}" for o in outcomes
    )


async def list_all(session: ClientSession, url: str) -> list[Any]:
    """Every item of a paged list (following X-Next-Page-Token)."""
    items: list[Any] = []
    token = ""
    while True:
        page = await send(session, Request("list", "GET", f"{url}&pageToken={token}", api_key=STATIC_KEY))
        assert page.status == 200, page
        items.extend(page.body)
        token = page.headers.get("X-Next-Page-Token", "")
        if not token:
            return items


def blocked_after_death(outcomes: list[Outcome], backs: list[float]) -> list[float]:
    """For each 409 of a key: how long after its attempt died it was answered, counting from
    the later of the end of the key's last answer that was not 409 (the client saw it die)
    and the last moment the database answered again (an attempt dead during the outage
    cannot be freed before). inf for a 409 with neither before it."""
    blocked = []
    for index, outcome in enumerate(outcomes):
        if outcome.status != 409:
            continue
        moments = [back for back in backs if back <= outcome.started]
        moments += [o.started + o.elapsed for o in outcomes[:index] if o.status != 409]
        blocked.append(outcome.started - max(moments, default=-float("inf")))
    return blocked


async def test_keyed_writers_through_a_killed_and_a_frozen_database(
    stack: Stack, database: Database, session: ClientSession
) -> None:
    base = stack.base_url
    pet = await create_pet(session, base, STATIC_KEY)
    get_pet = Request("get pet", "GET", f"{base}/pet/{pet.body['id']}")
    pets = PetPool(await create_pets(session, base, STATIC_KEY, POOL_PETS))
    answers: dict[str, list[Outcome]] = {}
    stop = asyncio.Event()
    backs: list[float] = []
    """When the database answered again: after its restart, and after its thaw."""

    def written_since(moment: float) -> bool:
        """Whether every writer has had a create answered 200 since `moment`."""
        done = {
            name.split("-")[1]
            for name, outcomes in answers.items()
            if any(o.status == 200 and o.started >= moment for o in outcomes)
        }
        return len(done) == WRITERS

    async def until_written_since(moment: float) -> None:
        deadline = time.monotonic() + RECOVERY_SECONDS
        while not written_since(moment):
            # A writer that failed (its key's budget, or no pet left) says why, not this.
            failed = [w.exception() for w in writers if w.done() and w.exception() is not None]
            assert not failed, failed
            assert time.monotonic() < deadline, "the writers did not all recover"
            await asyncio.sleep(0.1)

    async with SteadyLoad(session, [get_pet], workers=2) as load:
        writers = [
            asyncio.create_task(
                keyed_writer(
                    session,
                    functools.partial(writer_request, base, writer, pets=pets),
                    answers,
                    stop,
                )
            )
            for writer in range(WRITERS)
        ]
        try:
            await asyncio.sleep(1.0)
            await asyncio.to_thread(database.kill)
            await asyncio.sleep(2.0)
            await asyncio.to_thread(database.start)
            backs.append(time.monotonic())
            await until_written_since(backs[-1])
            await asyncio.sleep(1.0)
            database.freeze()  # longer than the gateway's deadline: attempts die at work
            try:
                await asyncio.sleep(3.0)
            finally:
                database.thaw()
            backs.append(time.monotonic())
            await until_written_since(backs[-1])
            await asyncio.sleep(1.0)
        finally:
            stop.set()
            failures = [
                result
                for result in await asyncio.gather(*writers, return_exceptions=True)
                if isinstance(result, BaseException)
            ]
        assert not failures, failures

    everything = [o for outcomes in answers.values() for o in outcomes]
    unexpected = [o for o in everything if o.status not in (200, 409, 503)]
    assert not unexpected, unexpected
    assert all(o.headers.get("Retry-After") == "1" for o in everything if o.status in (409, 503))
    assert all(o.is_error_body for o in everything if o.status == 503)
    unexpected = [o for o in load.outcomes if o.status not in (200, 503)]
    assert not unexpected, unexpected
    # The faults were felt, and every writer got through both.
    assert any(o.status == 503 for o in everything)
    assert len(backs) == 2

    # No key answered 409 more than a second after its attempt died (plus the margin).
    blocked = {name: blocked_after_death(outcomes, backs) for name, outcomes in answers.items()}
    worst = max((seconds for values in blocked.values() for seconds in values), default=0.0)
    assert worst < FREE_WITHIN_SECONDS + CRASH_MARGIN_SECONDS, {
        name: [round(seconds, 2) for seconds in values] for name, values in blocked.items() if values
    }

    # Every key was acknowledged once, and nothing acknowledged was lost or made twice: one pet
    # (by name) or one order (by quantity) per key, with the id its 200 gave.
    acknowledged = {name: outcomes[-1].body["id"] for name, outcomes in answers.items()}
    assert all(outcomes[-1].status == 200 for outcomes in answers.values())
    # Every order of the stack is listed (each of a pet of its own, so not by pet).
    available = await list_all(session, f"{base}/pet/findByStatus?status=available&limit=1000")
    orders = await list_all(session, f"{base}/store/order?limit=1000")
    stored = collections.Counter(
        [(p["name"], p["id"]) for p in available if p["name"].startswith("crash-")]
        + [(order_key(o), o["id"]) for o in orders]
    )
    assert stored == collections.Counter(acknowledged.items())
    # Each order is of the pet its key was given.
    assert {order_key(o): o["petId"] for o in orders} == pets.given
    # And each key answers with the resource it made. (Idempotent-Replayed: true is not asserted
    # here. Once, a key acknowledged 200 answered its order again without it, as a take-over of
    # a record still pending would: FerretDB v1 updates by reading and writing back, so a lease
    # renewal the frozen server still held could write the pending record back over the answer.
    # The service no longer writes an answer while a renewal of its own is on its way, but one
    # the client gave up on may still sit in a frozen server. On MongoDB each update is atomic.
    # Either way the reserved id keeps it to one effect, which is what is asserted.)
    replays = await asyncio.gather(
        *(
            send(session, writer_request(base, int(writer), int(number), pets=pets))
            for writer, number in (name.split("-")[1:] for name in answers)
        )
    )
    for replay in replays:
        history = [
            (round(o.started - backs[0], 2), o.status, o.headers.get("X-Request-ID"))
            for o in answers[replay.request]
        ]
        assert (replay.status, replay.body["id"]) == (200, acknowledged[replay.request]), (replay, history)
