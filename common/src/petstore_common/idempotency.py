"""Idempotency keys: a retried create has no second effect and gets the first answer again.

The service that owns the resource records (caller, key) -> (request fingerprint, response) in
its own database, under the record's unique `_id`, before it answers: two racing twins cannot
both insert the record, so only one runs. A record is `pending` while its request runs and
`done` with the serialized response after. Records are kept IDEMPOTENCY_TTL_SECONDS (24 h)
from their first request; expiry is enforced by the reader and a periodic purge, not a TTL
index (FerretDB has none).

A running request holds its key with a short lease (LEASE_SECONDS), renewed while it runs, and
under a holder token of its own that fences every later write to the record (reserve, renew,
complete, release, abandon): a request whose lease ran out and was taken over by a retry can
no longer reserve, record or free anything. So a request that dies anywhere (cancelled during
its claim, its database lost after the insert, the process gone) blocks its key at most one
lease, and at once when it can still say so.

A request that fails with a definite answer (invalid, not found, taken) releases its record,
so it can be retried as it is or corrected. One whose outcome is unknown (the database or a
service went away mid-write, a cancellation) abandons its record with the ids it reserved,
free to be taken over at once: the retry writes under the same ids, and finding them taken
means the first attempt did write, so the resource is answered, never created twice. A
pending record whose lease is live is ABORTED (409) for its twins.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol, Self, TypeVar

from google.protobuf.message import Message
from pymongo import ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from petstore.auth.v1 import caller_pb2
from petstore_common.callers import customer_id, is_staff
from petstore_common.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    ServiceError,
    Unavailable,
)
from petstore_common.idempotency_keys import LEASE_SECONDS, check_key
from petstore_common.mongo import KeyedLocks

log = logging.getLogger(__name__)

DEFAULT_TTL_SECONDS = 24 * 3600.0
RENEW_INTERVAL_SECONDS = 0.25
"""A running request renews its lease this often: three renewals may be slow or lost before a
twin can take the key over (and then the fence stops the first from taking effect)."""
PURGE_INTERVAL_SECONDS = 60.0

IN_PROGRESS = "a request with this Idempotency-Key is still being processed; retry later"
TAKEN_OVER = "a retry of this request took its Idempotency-Key over; retry to get its answer"
REUSED = "this Idempotency-Key was already used with a different request"

Document = dict[str, Any]
ResponseT = TypeVar("ResponseT", bound=Message)
MAX_ID_ATTEMPTS = 64
"""Fresh ids tried before giving up: one is taken only when a client chose it."""


def caller_scope(caller: caller_pb2.Caller) -> str:
    """Keys are the caller's own: one staff key, one customer, or everybody anonymous."""
    if is_staff(caller):
        return f"staff:{caller.staff_key_id}"
    customer = customer_id(caller)
    return "anonymous" if customer is None else f"customer:{customer}"


def fingerprint(request: Message, *, secret: bytes = b"") -> str:
    """A digest of what the request asks for: the request without its key and caller, in
    deterministic wire form (so the same pet sent as JSON or as XML is the same request).
    With a secret it is an HMAC, for requests holding a password."""
    content = type(request)()
    content.CopyFrom(request)
    for name in ("idempotency_key", "caller"):
        if name in content.DESCRIPTOR.fields_by_name:
            content.ClearField(name)
    data = content.SerializeToString(deterministic=True)
    if secret:
        return hmac.new(secret, data, hashlib.sha256).hexdigest()
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Claimed:
    """The request may run. `reserved` holds the ids an earlier attempt of it reserved (its
    outcome unknown): write under those ids again."""

    reserved: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Replay:
    """The request ran before: this is its serialized response."""

    response: bytes


class IdempotencyStore(Protocol):
    """Every write after the claim names its `holder` (the claim's token) and changes nothing
    once another attempt holds the record, or it has its response."""

    async def ensure_indexes(self) -> None:
        """Create the indexes the purge needs (idempotent)."""

    async def claim(
        self, record_id: str, fingerprint: str, holder: str, now: datetime, ttl: timedelta
    ) -> Claimed | Replay:
        """Start the request under `record_id` for `holder`, its lease running from `now`:
        Claimed, or Replay of the recorded response. FailedPrecondition when the record holds
        another request; Aborted while a twin's lease is live."""

    async def renew(self, record_id: str, holder: str, now: datetime) -> bool:
        """Extend the holder's lease from `now`; False when it holds the record no more."""

    async def reserve(self, record_id: str, holder: str, ids: tuple[int, ...]) -> None:
        """Remember the ids the running request is about to write under (Aborted when the
        holder was taken over: it must not write)."""

    async def complete(self, record_id: str, holder: str, response: bytes) -> None:
        """Record the response: from now on the key replays it (Aborted when taken over)."""

    async def release(self, record_id: str, holder: str) -> None:
        """Forget a claim whose request had a definite failure: a retry runs afresh."""

    async def abandon(self, record_id: str, holder: str) -> None:
        """Keep the claim and its reserved ids, but let a retry take it over at once."""

    async def purge(self, now: datetime) -> None:
        """Delete expired records."""


FREE = datetime(1970, 1, 1, tzinfo=UTC)
"""The lease of an abandoned record: over."""


@dataclass
class _Record:
    fingerprint: str
    expires_at: datetime
    holder: str | None
    lease_until: datetime
    reserved: tuple[int, ...] = ()
    response: bytes | None = None


@dataclass
class MemoryIdempotencyStore:
    """The embedded store's records. No method awaits, so each call is atomic on the loop."""

    records: dict[str, _Record] = field(default_factory=dict)

    async def ensure_indexes(self) -> None:
        """Nothing to index."""

    async def claim(
        self, record_id: str, fingerprint: str, holder: str, now: datetime, ttl: timedelta
    ) -> Claimed | Replay:
        record = self.records.get(record_id)
        if record is None or record.expires_at <= now:
            self.records[record_id] = _Record(fingerprint, now + ttl, holder, now + _LEASE)
            return Claimed()
        if record.fingerprint != fingerprint:
            raise FailedPrecondition(REUSED)
        if record.response is not None:
            return Replay(record.response)
        if record.lease_until > now:
            raise Aborted(IN_PROGRESS)
        record.holder, record.lease_until = holder, now + _LEASE  # taken over
        return Claimed(record.reserved)

    def _held(self, record_id: str, holder: str) -> _Record | None:
        record = self.records.get(record_id)
        if record is None or record.holder != holder or record.response is not None:
            return None
        return record

    async def renew(self, record_id: str, holder: str, now: datetime) -> bool:
        record = self._held(record_id, holder)
        if record is None:
            return False
        record.lease_until = now + _LEASE
        return True

    async def reserve(self, record_id: str, holder: str, ids: tuple[int, ...]) -> None:
        record = self._held(record_id, holder)
        if record is None:
            raise Aborted(TAKEN_OVER)
        record.reserved = ids

    async def complete(self, record_id: str, holder: str, response: bytes) -> None:
        record = self._held(record_id, holder)
        if record is None:
            raise Aborted(TAKEN_OVER)
        record.response, record.holder = response, None

    async def release(self, record_id: str, holder: str) -> None:
        if self._held(record_id, holder) is not None:
            del self.records[record_id]

    async def abandon(self, record_id: str, holder: str) -> None:
        record = self._held(record_id, holder)
        if record is not None:
            record.holder, record.lease_until = None, FREE

    async def purge(self, now: datetime) -> None:
        for record_id in [key for key, record in self.records.items() if record.expires_at <= now]:
            del self.records[record_id]


_LEASE = timedelta(seconds=LEASE_SECONDS)
MAX_CLAIM_ATTEMPTS = 8
"""A claim races only with twins and with expiry; a few rounds always settle it."""


class MongoIdempotencyStore:
    """Records in the service's own database: `_id` is "<caller scope> <key>" (a key has no
    space), which the collection's unique `_id` index guards. Every conditional write is atomic
    on MongoDB; FerretDB v1 evaluates a filter and writes in two steps, so the writes to one
    record are also taken in turn within the process (KeyedLocks)."""

    def __init__(self, collection: AsyncCollection[Document]) -> None:
        self._records = collection
        self._locks = KeyedLocks()

    async def ensure_indexes(self) -> None:
        await self._records.create_index("expires_at")

    async def claim(
        self, record_id: str, fingerprint: str, holder: str, now: datetime, ttl: timedelta
    ) -> Claimed | Replay:
        fresh = {
            "_id": record_id,
            "fingerprint": fingerprint,
            "expires_at": now + ttl,
            "holder": holder,
            "lease_until": now + _LEASE,
            "reserved": [],
        }
        for _ in range(MAX_CLAIM_ATTEMPTS):
            try:
                await self._records.insert_one(fresh)
                return Claimed()
            except DuplicateKeyError:
                pass
            record = await self._records.find_one({"_id": record_id})
            if record is None:
                continue  # released or purged meanwhile: insert again
            if _aware(record["expires_at"]) <= now:
                # Expired: replace it, unless a twin replaced it first.
                await self._records.delete_one({"_id": record_id, "expires_at": record["expires_at"]})
                continue
            if record["fingerprint"] != fingerprint:
                raise FailedPrecondition(REUSED)
            if record.get("response") is not None:
                return Replay(bytes(record["response"]))
            if _aware(record["lease_until"]) > now:
                raise Aborted(IN_PROGRESS)
            # Take it over while its lease is still out, and read the ids it reserved in the
            # same step: a late reserve by the earlier holder lands before or is fenced after.
            async with self._locks.hold(record_id):
                taken = await self._records.find_one_and_update(
                    {"_id": record_id, "response": None, "lease_until": {"$lte": now}},
                    {"$set": {"holder": holder, "lease_until": now + _LEASE}},
                    return_document=ReturnDocument.AFTER,
                )
            if taken is not None:
                return Claimed(tuple(int(i) for i in taken.get("reserved", [])))
        raise Unavailable("could not claim the Idempotency-Key; retry")

    async def _update_held(self, record_id: str, holder: str, change: Document) -> bool:
        async with self._locks.hold(record_id):
            result = await self._records.update_one(
                {"_id": record_id, "holder": holder, "response": None}, {"$set": change}
            )
        return result.matched_count == 1

    async def renew(self, record_id: str, holder: str, now: datetime) -> bool:
        return await self._update_held(record_id, holder, {"lease_until": now + _LEASE})

    async def reserve(self, record_id: str, holder: str, ids: tuple[int, ...]) -> None:
        if not await self._update_held(record_id, holder, {"reserved": list(ids)}):
            raise Aborted(TAKEN_OVER)

    async def complete(self, record_id: str, holder: str, response: bytes) -> None:
        if not await self._update_held(record_id, holder, {"response": response, "holder": None}):
            raise Aborted(TAKEN_OVER)

    async def release(self, record_id: str, holder: str) -> None:
        async with self._locks.hold(record_id):
            await self._records.delete_one({"_id": record_id, "holder": holder, "response": None})

    async def abandon(self, record_id: str, holder: str) -> None:
        # No holder: a renewal of it still on its way cannot extend the lease again.
        await self._update_held(record_id, holder, {"holder": None, "lease_until": FREE})

    async def purge(self, now: datetime) -> None:
        await self._records.delete_many({"expires_at": {"$lte": now}})


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass
class Reservation:
    """What a running request reserves before it writes: the ids its resource will have."""

    store: IdempotencyStore
    record_id: str | None
    earlier: tuple[int, ...] = ()
    """Ids an earlier attempt with an unknown outcome reserved: write under them again."""
    ids: tuple[int, ...] = ()
    holder: str = ""

    async def reserve(self, ids: tuple[int, ...]) -> None:
        self.ids = ids
        if self.record_id is not None:
            await self.store.reserve(self.record_id, self.holder, ids)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Idempotency:
    """Runs creates under their callers' idempotency keys; shared by the services."""

    def __init__(
        self,
        store: IdempotencyStore,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._store = store
        self._ttl = timedelta(seconds=ttl_seconds)
        self._clock = clock
        self._next_purge: datetime | None = None

    async def run(
        self,
        *,
        key: str,
        caller: caller_pb2.Caller,
        fingerprint: str,
        response_type: type[ResponseT],
        execute: Callable[[Reservation], Awaitable[ResponseT]],
    ) -> tuple[ResponseT, bool]:
        """(the response, whether it is a replay). Without a key, `execute` just runs."""
        if not key:
            return await execute(Reservation(self._store, None)), False
        record_id = f"{caller_scope(caller)} {check_key(key)}"
        now = self._clock()
        await self._purge_now_and_then(now)
        holder = uuid.uuid4().hex
        try:
            outcome = await self._store.claim(record_id, fingerprint, holder, now, self._ttl)
        except ServiceError:
            raise  # refused (a twin runs, another request) or unavailable before any insert
        except BaseException:  # cancelled, or the database lost: our insert may have landed
            await asyncio.shield(self._settle(record_id, holder, definite=False))
            raise
        if isinstance(outcome, Replay):
            return response_type.FromString(outcome.response), True
        reservation = Reservation(self._store, record_id, outcome.reserved, holder=holder)
        # The answer is never written while a renewal of ours is on its way: a store that updates
        # by reading and writing back the record (FerretDB v1) could put the pending record back
        # over it. The renewals go on until the answer is written.
        renewal = _Renewal(self._store, record_id, holder, self._clock)
        try:
            response = await execute(reservation)
            async with renewal.paused():
                await self._store.complete(record_id, holder, response.SerializeToString())
        except ServiceError as exc:
            definite = not isinstance(exc, Unavailable)
            await asyncio.shield(self._settle(record_id, holder, definite=definite, renewal=renewal))
            raise
        except BaseException:  # a deadline, a cancellation, a lost database: outcome unknown
            await asyncio.shield(self._settle(record_id, holder, definite=False, renewal=renewal))
            raise
        await renewal.stop()
        return response, False

    async def serve(
        self,
        request: CreateRequest,
        response_type: type[ResponseT],
        execute: Callable[[Reservation], Awaitable[ResponseT]],
        *,
        secret: bytes = b"",
    ) -> ResponseT:
        """Answer a create request under its own Idempotency-Key and caller: `run` with the
        request's fingerprint (an HMAC with a secret), the response's `idempotent_replay` set."""
        assert isinstance(request, Message)
        response, replayed = await self.run(
            key=request.idempotency_key,
            caller=request.caller,
            fingerprint=fingerprint(request, secret=secret),
            response_type=response_type,
            execute=execute,
        )
        setattr(response, "idempotent_replay", replayed)  # noqa: B010 (every create response has it)
        return response

    async def _settle(
        self, record_id: str, holder: str, *, definite: bool, renewal: _Renewal | None = None
    ) -> None:
        """Release (a definite answer) or abandon the record, once its renewals have stopped."""
        if renewal is not None:
            await renewal.stop()
        try:
            if definite:
                await self._store.release(record_id, holder)
            else:
                await self._store.abandon(record_id, holder)
        except Exception as exc:  # the database is gone too: the lease frees the key
            log.warning(
                "could not settle an idempotency record",
                extra={"error": type(exc).__name__, "detail": str(exc)[:200]},
            )

    async def _purge_now_and_then(self, now: datetime) -> None:
        if self._next_purge is not None and now < self._next_purge:
            return
        self._next_purge = now + timedelta(seconds=PURGE_INTERVAL_SECONDS)
        await self._store.purge(now)


class _Renewal:
    """Renews a running request's lease every RENEW_INTERVAL_SECONDS until stopped or taken over.

    It must never outlive its attempt: a renewal that lands after the record was settled
    would hold the key for nobody. It is never cancelled (a cancellation inside the driver is
    the riskiest moment it has: petstore_common.driver_waits): the loop checks a flag before
    every renewal, and `stop` waits (at most one lease) for a renewal on its way, so the
    settling write comes after it. On a store that updates by reading and writing back
    (FerretDB v1), a renewal still on its way could otherwise put the settled record back."""

    def __init__(
        self, store: IdempotencyStore, record_id: str, holder: str, clock: Callable[[], datetime]
    ) -> None:
        self._store, self._record_id, self._holder, self._clock = store, record_id, holder, clock
        self._stopped = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task = asyncio.create_task(self._renew_until_stopped())

    def paused(self) -> asyncio.Lock:
        """Held while the answer is written: never at the same time as a renewal."""
        return self._lock

    async def stop(self) -> None:
        self._stopped.set()
        await asyncio.wait({self._task}, timeout=LEASE_SECONDS)

    async def _renew_until_stopped(self) -> None:
        while not self._stopped.is_set():
            with contextlib.suppress(TimeoutError):  # cancels only the wait, never a renewal
                async with asyncio.timeout(RENEW_INTERVAL_SECONDS):
                    await self._stopped.wait()
            try:
                async with self._lock:
                    if self._stopped.is_set():
                        return
                    renewed = await self._store.renew(self._record_id, self._holder, self._clock())
                if not renewed:
                    return
            except Exception as exc:  # the next renewal may get through; the fence guards
                log.warning("could not renew an idempotency lease", extra={"error": type(exc).__name__})


class CreateRequest(Protocol):
    """A create request message: its Idempotency-Key (empty when none) and its caller."""

    @property
    def idempotency_key(self) -> str: ...

    @property
    def caller(self) -> caller_pb2.Caller: ...


class Numbered(Protocol):
    """A resource message with an optional numeric `id` field."""

    id: int

    def HasField(self, field_name: Literal["id"], /) -> bool: ...

    def CopyFrom(self, other: Self, /) -> None: ...


NumberedT = TypeVar("NumberedT", bound=Numbered)


class NumberedStore(Protocol[NumberedT]):
    """A store of numbered resources that draws fresh ids."""

    async def new_id(self) -> int: ...

    async def create(self, resource: NumberedT, /) -> NumberedT: ...

    async def get(self, resource_id: int, /) -> NumberedT: ...


async def create_under_reserved_id(
    reservation: Reservation, store: NumberedStore[NumberedT], resource: NumberedT
) -> NumberedT:
    """Create `resource` in `store`. Without an idempotency key it is stored as it is (the
    store draws an id when it has none). Under a key it is created under an id its idempotency
    record holds before the write, so a retry of an attempt whose outcome is unknown writes
    under the same id: finding it taken then means the earlier attempt wrote it, and that
    resource is the answer."""
    if reservation.record_id is None:
        return await store.create(resource)
    if reservation.earlier:
        earlier = reservation.earlier[0]
        try:
            return await store.create(_numbered(resource, earlier))
        except AlreadyExists:
            return await store.get(earlier)
    if resource.HasField("id"):
        await reservation.reserve((resource.id,))
        return await store.create(resource)
    for _ in range(MAX_ID_ATTEMPTS):
        candidate = await store.new_id()
        await reservation.reserve((candidate,))
        try:
            return await store.create(_numbered(resource, candidate))
        except AlreadyExists:
            continue  # a client chose this id: take the next
    raise Unavailable("could not allocate a free id")


def _numbered(resource: NumberedT, resource_id: int) -> NumberedT:
    copy = type(resource)()
    copy.CopyFrom(resource)
    copy.id = resource_id
    return copy
