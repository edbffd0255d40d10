"""Idempotency records: one contract for the embedded and the MongoDB store (FerretDB under
`make test`), and the runner the services share."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import ConnectionFailure

from petstore.auth.v1 import caller_pb2
from petstore.pet.v1 import pet_pb2, pet_service_pb2
from petstore_common import callers
from petstore_common import idempotency as idempotency_module
from petstore_common.errors import Aborted, AlreadyExists, FailedPrecondition, InvalidArgument, Unavailable
from petstore_common.idempotency import (
    IN_PROGRESS,
    RENEW_INTERVAL_SECONDS,
    REUSED,
    TAKEN_OVER,
    Claimed,
    Idempotency,
    IdempotencyStore,
    MemoryIdempotencyStore,
    MongoIdempotencyStore,
    Replay,
    Reservation,
    caller_scope,
    fingerprint,
)
from petstore_common.idempotency_keys import LEASE_SECONDS, check_key
from petstore_devstack.doc_tables import documentation_words

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
LEASE = timedelta(seconds=LEASE_SECONDS)
STAFF = caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_STAFF, staff_key_id="a")
H = "holder-1"
"""The token of the attempt that claims first."""


@pytest.fixture
def memory_store() -> MemoryIdempotencyStore:
    return MemoryIdempotencyStore()


@pytest.fixture
async def mongo_store(mongo_db: AsyncDatabase[dict[str, Any]]) -> MongoIdempotencyStore:
    store = MongoIdempotencyStore(mongo_db["idempotency_keys"])
    await store.ensure_indexes()
    return store


@pytest.fixture(params=["memory", pytest.param("mongo", marks=pytest.mark.mongo)])
def store(request: pytest.FixtureRequest) -> IdempotencyStore:
    implementation: IdempotencyStore = request.getfixturevalue(f"{request.param}_store")
    return implementation


# --- the store contract --------------------------------------------------------------------


async def test_a_first_claim_runs_and_a_completed_one_replays(store: IdempotencyStore) -> None:
    assert await store.claim("staff:a k1", "f1", H, T0, DAY) == Claimed()
    await store.complete("staff:a k1", H, b"response-1")

    assert await store.claim("staff:a k1", "f1", H, T0 + timedelta(hours=23), DAY) == Replay(b"response-1")


async def test_another_request_under_the_key_is_refused(store: IdempotencyStore) -> None:
    await store.claim("staff:a k1", "f1", H, T0, DAY)
    await store.complete("staff:a k1", H, b"r")

    with pytest.raises(FailedPrecondition, match=REUSED):
        await store.claim("staff:a k1", "f2", H, T0, DAY)


async def test_a_twin_of_a_running_request_is_aborted(store: IdempotencyStore) -> None:
    await store.claim("staff:a k1", "f1", H, T0, DAY)

    with pytest.raises(Aborted, match=IN_PROGRESS):
        await store.claim("staff:a k1", "f1", "twin", T0 + LEASE / 2, DAY)


async def test_racing_twins_one_claims(store: IdempotencyStore) -> None:
    outcomes = await asyncio.gather(
        *(store.claim("customer:7 k", "f", f"twin {n}", T0, DAY) for n in range(12)), return_exceptions=True
    )

    assert sum(isinstance(outcome, Claimed) for outcome in outcomes) == 1
    assert all(isinstance(outcome, (Claimed, Aborted)) for outcome in outcomes), outcomes


async def test_records_of_other_callers_never_meet(store: IdempotencyStore) -> None:
    await store.claim("customer:1 k", "f1", H, T0, DAY)
    await store.complete("customer:1 k", H, b"one")

    assert await store.claim("customer:2 k", "f2", H, T0, DAY) == Claimed()


async def test_an_expired_record_is_forgotten(store: IdempotencyStore) -> None:
    await store.claim("staff:a k", "f1", H, T0, DAY)
    await store.complete("staff:a k", H, b"old")

    assert await store.claim("staff:a k", "f2", H, T0 + DAY, DAY) == Claimed()


async def test_a_released_claim_runs_again_even_corrected(store: IdempotencyStore) -> None:
    await store.claim("staff:a k", "f1", H, T0, DAY)
    await store.release("staff:a k", H)

    assert await store.claim("staff:a k", "f2", H, T0, DAY) == Claimed()


async def test_an_abandoned_claim_is_taken_over_with_its_reserved_ids(store: IdempotencyStore) -> None:
    await store.claim("staff:a k", "f", H, T0, DAY)
    await store.reserve("staff:a k", H, (41, 42))
    await store.abandon("staff:a k", H)

    assert await store.claim("staff:a k", "f", "retry", T0, DAY) == Claimed((41, 42))
    with pytest.raises(Aborted):  # taken over: held again
        await store.claim("staff:a k", "f", "another", T0 + LEASE / 2, DAY)


async def test_a_crashed_claim_is_free_once_its_lease_runs_out(store: IdempotencyStore) -> None:
    await store.claim("staff:a k", "f", H, T0, DAY)
    await store.reserve("staff:a k", H, (7,))

    with pytest.raises(Aborted):
        await store.claim("staff:a k", "f", "retry", T0 + LEASE * 0.9, DAY)
    assert await store.claim("staff:a k", "f", "retry", T0 + LEASE, DAY) == Claimed((7,))


async def test_a_renewed_lease_keeps_the_key_past_its_first_lease(store: IdempotencyStore) -> None:
    await store.claim("staff:a k", "f", H, T0, DAY)

    assert await store.renew("staff:a k", H, T0 + LEASE * 0.75) is True
    with pytest.raises(Aborted, match=IN_PROGRESS):
        await store.claim("staff:a k", "f", "twin", T0 + LEASE * 1.5, DAY)
    assert await store.claim("staff:a k", "f", "twin", T0 + LEASE * 1.75, DAY) == Claimed()


async def test_a_taken_over_holder_can_no_longer_write(store: IdempotencyStore) -> None:
    await store.claim("staff:a k", "f", H, T0, DAY)
    await store.reserve("staff:a k", H, (7,))
    assert await store.claim("staff:a k", "f", "retry", T0 + LEASE, DAY) == Claimed((7,))

    assert await store.renew("staff:a k", H, T0 + LEASE) is False
    with pytest.raises(Aborted, match=TAKEN_OVER):
        await store.reserve("staff:a k", H, (8,))
    with pytest.raises(Aborted, match=TAKEN_OVER):
        await store.complete("staff:a k", H, b"late")
    await store.release("staff:a k", H)
    await store.abandon("staff:a k", H)

    with pytest.raises(Aborted, match=IN_PROGRESS):  # the retry still holds it
        await store.claim("staff:a k", "f", "third", T0 + LEASE * 1.5, DAY)
    await store.complete("staff:a k", "retry", b"answer")
    assert await store.claim("staff:a k", "f", "third", T0 + LEASE * 1.5, DAY) == Replay(b"answer")


async def test_a_renewal_arriving_after_the_abandon_does_not_block_the_key(store: IdempotencyStore) -> None:
    await store.claim("staff:a k", "f", H, T0, DAY)
    await store.abandon("staff:a k", H)

    assert await store.renew("staff:a k", H, T0) is False
    assert await store.claim("staff:a k", "f", "retry", T0, DAY) == Claimed()


async def test_release_and_abandon_leave_a_completed_record_alone(store: IdempotencyStore) -> None:
    await store.claim("staff:a k", "f", H, T0, DAY)
    await store.complete("staff:a k", H, b"done")
    await store.release("staff:a k", H)
    await store.abandon("staff:a k", H)

    assert await store.claim("staff:a k", "f", H, T0, DAY) == Replay(b"done")


async def test_purge_deletes_only_expired_records(store: IdempotencyStore) -> None:
    await store.claim("staff:a old", "f", H, T0, DAY)
    await store.complete("staff:a old", H, b"old")
    await store.claim("staff:a new", "f", H, T0 + timedelta(hours=12), DAY)
    await store.complete("staff:a new", H, b"new")

    await store.purge(T0 + DAY)

    assert await store.claim("staff:a new", "f", H, T0 + DAY, DAY) == Replay(b"new")
    assert await store.claim("staff:a old", "g", H, T0 + DAY, DAY) == Claimed()


# --- keys, scopes, fingerprints ------------------------------------------------------------


@pytest.mark.parametrize("key", ["", "a b", "k" * 256, "tab\there", "ключ"])
def test_keys_are_visible_ascii_up_to_255(key: str) -> None:
    with pytest.raises(InvalidArgument, match="Idempotency-Key must be 1 to 255"):
        check_key(key)


@pytest.mark.parametrize("key", ["k", "k" * 255, "0f8fad5b-d9cb-469f-a165-70867728950e", "!~"])
def test_good_keys_pass(key: str) -> None:
    assert check_key(key) == key


def test_scopes_tell_callers_apart() -> None:
    staff_a = caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_STAFF, staff_key_id="a")
    staff_b = caller_pb2.Caller(kind=caller_pb2.CALLER_KIND_STAFF, staff_key_id="b")
    scopes = {caller_scope(c) for c in (staff_a, staff_b, callers.customer(1), callers.customer(2))}
    assert len(scopes) == 4
    assert caller_scope(callers.anonymous()) == caller_scope(caller_pb2.Caller()) == "anonymous"


def test_the_fingerprint_ignores_key_and_caller_and_sees_everything_else() -> None:
    def request(
        name: str, key: str = "k", caller: caller_pb2.Caller = STAFF
    ) -> pet_service_pb2.CreatePetRequest:
        return pet_service_pb2.CreatePetRequest(
            pet=pet_pb2.Pet(name=name), idempotency_key=key, caller=caller
        )

    base = fingerprint(request("Rex"))
    assert fingerprint(request("Rex", key="other", caller=callers.customer(3))) == base
    assert fingerprint(request("Max")) != base
    assert fingerprint(request("Rex"), secret=b"s") not in (base, fingerprint(request("Rex"), secret=b"t"))


# --- the runner ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class Effects:
    """A create whose effect is counted: `Caller` stands in for any response message."""

    def __init__(self) -> None:
        self.count = 0
        self.reserved: list[tuple[int, ...]] = []

    async def once(self, reservation: Reservation) -> caller_pb2.Caller:
        self.reserved.append(reservation.earlier)
        await reservation.reserve((100 + self.count,))
        self.count += 1
        return caller_pb2.Caller(user_id=self.count)


async def run(idempotency: Idempotency, effects: Effects, key: str = "k", fp: str = "f") -> tuple[Any, bool]:
    return await idempotency.run(
        key=key, caller=STAFF, fingerprint=fp, response_type=caller_pb2.Caller, execute=effects.once
    )


async def test_a_retry_replays_the_first_response_with_no_second_effect(store: IdempotencyStore) -> None:
    idempotency, effects = Idempotency(store, clock=Clock()), Effects()

    first = await run(idempotency, effects)
    again = await run(idempotency, effects)

    assert (first, again) == ((caller_pb2.Caller(user_id=1), False), (caller_pb2.Caller(user_id=1), True))
    assert effects.count == 1


async def test_without_a_key_every_request_runs(store: IdempotencyStore) -> None:
    idempotency, effects = Idempotency(store, clock=Clock()), Effects()

    await run(idempotency, effects, key="")
    await run(idempotency, effects, key="")

    assert effects.count == 2


async def test_a_definite_failure_frees_the_key(store: IdempotencyStore) -> None:
    idempotency, effects = Idempotency(store, clock=Clock()), Effects()

    async def taken(reservation: Reservation) -> caller_pb2.Caller:
        raise AlreadyExists("pet 5 already exists")

    with pytest.raises(AlreadyExists):
        await idempotency.run(
            key="k", caller=STAFF, fingerprint="f", response_type=caller_pb2.Caller, execute=taken
        )
    assert await run(idempotency, effects, fp="corrected") == (caller_pb2.Caller(user_id=1), False)


async def test_an_unknown_outcome_hands_its_reserved_ids_to_the_retry(store: IdempotencyStore) -> None:
    idempotency, effects = Idempotency(store, clock=Clock()), Effects()

    async def lost(reservation: Reservation) -> caller_pb2.Caller:
        await reservation.reserve((77,))
        raise Unavailable("the database is unavailable")

    with pytest.raises(Unavailable):
        await idempotency.run(
            key="k", caller=STAFF, fingerprint="f", response_type=caller_pb2.Caller, execute=lost
        )
    await run(idempotency, effects)

    assert effects.reserved == [(77,)]


# --- an attempt that dies frees its key; a live one keeps it -------------------------------


class FaultyStore:
    """A store whose calls reach the real one and then fail as a database can: `lost` names
    the calls whose reply is lost after they took effect (ConnectionFailure), `hung` those
    whose reply never comes; `down` the calls that never get through."""

    def __init__(self, store: IdempotencyStore) -> None:
        self.store = store
        self.lost: set[str] = set()
        self.hung: set[str] = set()
        self.down: set[str] = set()
        self.hanging = asyncio.Event()
        """Set once a hung call took effect."""

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.store, name)

        async def call(*args: Any) -> Any:
            if name in self.down:
                raise ConnectionFailure(f"{name}: the database is gone")
            result = await real(*args)
            if name in self.hung:
                self.hanging.set()
                await asyncio.Event().wait()
            if name in self.lost:
                raise ConnectionFailure(f"{name}: the reply was lost")
            return result

        return call


async def run_on(idempotency: Idempotency, execute: Any) -> tuple[Any, bool]:
    return await idempotency.run(
        key="k", caller=STAFF, fingerprint="f", response_type=caller_pb2.Caller, execute=execute
    )


async def test_an_attempt_cancelled_during_its_claim_frees_the_key_at_once(store: IdempotencyStore) -> None:
    faulty, clock, effects = FaultyStore(store), Clock(), Effects()
    faulty.hung.add("claim")  # the insert lands, the reply never comes: the caller gives up
    attempt = asyncio.create_task(run_on(Idempotency(faulty, clock=clock), effects.once))
    await faulty.hanging.wait()
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt

    assert await run(Idempotency(store, clock=clock), effects) == (caller_pb2.Caller(user_id=1), False)


async def test_an_insert_whose_reply_was_lost_frees_the_key_at_once(store: IdempotencyStore) -> None:
    faulty, clock, effects = FaultyStore(store), Clock(), Effects()
    faulty.lost.add("claim")

    with pytest.raises(ConnectionFailure):
        await run_on(Idempotency(faulty, clock=clock), effects.once)

    assert await run(Idempotency(store, clock=clock), effects) == (caller_pb2.Caller(user_id=1), False)


async def test_a_lost_database_during_the_abandon_blocks_the_key_one_lease(store: IdempotencyStore) -> None:
    faulty, clock, effects = FaultyStore(store), Clock(), Effects()
    faulty.down.add("abandon")

    async def lost(reservation: Reservation) -> caller_pb2.Caller:
        await reservation.reserve((77,))
        raise Unavailable("the database is unavailable")

    with pytest.raises(Unavailable):
        await run_on(Idempotency(faulty, clock=clock), lost)

    with pytest.raises(Aborted, match=IN_PROGRESS):
        await run(Idempotency(store, clock=clock), effects)
    clock.now = T0 + LEASE
    await run(Idempotency(store, clock=clock), effects)
    assert effects.reserved == [(77,)]


async def test_a_lost_reply_of_the_completion_hands_the_retry_its_ids(store: IdempotencyStore) -> None:
    faulty, clock, effects = FaultyStore(store), Clock(), Effects()
    faulty.down.add("complete")

    with pytest.raises(ConnectionFailure):
        await run_on(Idempotency(faulty, clock=clock), effects.once)

    assert await run(Idempotency(store, clock=clock), effects) == (caller_pb2.Caller(user_id=2), False)
    assert effects.reserved == [(), (100,)]


async def test_a_running_attempt_keeps_its_key_for_as_long_as_it_runs(store: IdempotencyStore) -> None:
    idempotency, effects = Idempotency(store), Effects()  # the real clock: renewals run on it
    release = asyncio.Event()

    async def slow(reservation: Reservation) -> caller_pb2.Caller:
        await release.wait()
        return await effects.once(reservation)

    attempt = asyncio.create_task(run_on(idempotency, slow))
    for _ in range(6):  # three leases
        await asyncio.sleep(LEASE_SECONDS / 2)
        with pytest.raises(Aborted, match=IN_PROGRESS):
            await run(idempotency, effects)
    release.set()

    assert await attempt == (caller_pb2.Caller(user_id=1), False)
    assert await run(idempotency, effects) == (caller_pb2.Caller(user_id=1), True)


async def test_the_answer_is_never_written_while_a_renewal_is_on_its_way(
    store: IdempotencyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A renewal that reads the pending record and writes it back (as FerretDB v1 updates)
    would undo an answer written meanwhile: the two never overlap."""
    monkeypatch.setattr(idempotency_module, "RENEW_INTERVAL_SECONDS", 0.001)
    in_flight: list[str] = []
    overlaps: list[str] = []

    class SlowRenewals(FaultyStore):
        def __getattr__(self, name: str) -> Any:
            real = getattr(self.store, name)

            async def call(*args: Any) -> Any:
                if name == "complete" and in_flight:
                    overlaps.append(name)
                in_flight.append(name)
                try:
                    if name == "renew":
                        await asyncio.sleep(0.02)
                    return await real(*args)
                finally:
                    in_flight.remove(name)

            return call

    idempotency, effects = Idempotency(SlowRenewals(store)), Effects()

    async def busy(reservation: Reservation) -> caller_pb2.Caller:
        await asyncio.sleep(0.01)  # long enough for a renewal to be on its way at the end
        return await effects.once(reservation)

    for attempt in range(5):
        await idempotency.run(
            key=f"k{attempt}", caller=STAFF, fingerprint="f", response_type=caller_pb2.Caller, execute=busy
        )
    assert effects.count == 5
    assert overlaps == []


class WriteBackRenewals(MemoryIdempotencyStore):
    """Renewals as FerretDB v1 makes them (read the record, write it back), through a driver
    call that swallows its cancellation (asyncio.wait_for on Python 3.11, cpython#86296)."""

    def __init__(self) -> None:
        super().__init__()
        self.renewals = 0

    async def renew(self, record_id: str, holder: str, now: datetime) -> bool:
        read = self._held(record_id, holder)
        if read is None:
            return False
        snapshot = dataclasses.replace(read)
        round_trip = asyncio.ensure_future(asyncio.sleep(0.05))
        try:
            await asyncio.shield(round_trip)
        except asyncio.CancelledError:
            await round_trip  # the driver finishes its round trip and loses the cancellation
        self.records[record_id] = dataclasses.replace(snapshot, lease_until=datetime.now(UTC) + LEASE)
        self.renewals += 1
        return True


async def test_a_renewal_never_outlives_its_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idempotency_module, "RENEW_INTERVAL_SECONDS", 0.01)
    store = WriteBackRenewals()
    idempotency, effects = Idempotency(store), Effects()

    async def dies(reservation: Reservation) -> caller_pb2.Caller:
        await reservation.reserve((7,))
        await asyncio.sleep(0.2)  # renewals on their way all along
        raise Unavailable("the database went away")

    with pytest.raises(Unavailable):
        await run_on(idempotency, dies)
    renewals_at_the_end = store.renewals
    # The retry takes the key over at once, and no renewal of the dead attempt comes after it.
    assert await run(idempotency, effects) == (caller_pb2.Caller(user_id=1), False)
    assert effects.reserved == [(7,)]
    await asyncio.sleep(0.2)
    assert store.renewals <= renewals_at_the_end + 1
    assert store.records[f"{caller_scope(STAFF)} k"].holder is None  # completed


class WatchedRenewals(MemoryIdempotencyStore):
    """Renewals that take a while, noting whether one was ever cancelled halfway."""

    def __init__(self) -> None:
        super().__init__()
        self.started = 0
        self.finished = 0
        self.cancelled = 0

    async def renew(self, record_id: str, holder: str, now: datetime) -> bool:
        self.started += 1
        try:
            await asyncio.sleep(0.05)  # the driver's round trip
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.finished += 1
        return await super().renew(record_id, holder, now)


async def test_a_renewal_on_its_way_is_never_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    # Stopping the renewals waits for one on its way rather than cancel it inside the driver.
    monkeypatch.setattr(idempotency_module, "RENEW_INTERVAL_SECONDS", 0.01)
    store, effects = WatchedRenewals(), Effects()

    async def busy(reservation: Reservation) -> caller_pb2.Caller:
        await asyncio.sleep(0.03)  # a renewal starts at 0.01 and is on its way at the end
        return await effects.once(reservation)

    assert await run_on(Idempotency(store), busy) == (caller_pb2.Caller(user_id=1), False)
    assert store.started >= 1
    assert store.cancelled == 0
    assert store.finished == store.started


async def test_an_attempt_taken_over_cannot_take_effect(store: IdempotencyStore) -> None:
    faulty, clock, effects = FaultyStore(store), Clock(), Effects()
    faulty.down.add("renew")  # its renewals never get through: the lease runs out while it runs
    reserved, taken_over = asyncio.Event(), asyncio.Event()

    async def stalled(reservation: Reservation) -> caller_pb2.Caller:
        reserved.set()
        await taken_over.wait()
        return await effects.once(reservation)

    first = asyncio.create_task(run_on(Idempotency(faulty, clock=clock), stalled))
    await reserved.wait()  # the first attempt holds the key (a store's round trip may take turns)
    clock.now = T0 + LEASE
    assert await run(Idempotency(store, clock=clock), effects) == (caller_pb2.Caller(user_id=1), False)
    taken_over.set()

    with pytest.raises(Aborted, match=TAKEN_OVER):
        await first
    assert effects.count == 1


def test_the_readme_states_the_lease_and_its_renewal() -> None:
    readme = documentation_words()
    assert f"a {LEASE_SECONDS:g} s lease" in readme
    assert f"renews every {RENEW_INTERVAL_SECONDS:g} s" in readme
