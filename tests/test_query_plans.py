"""Every query the services' MongoDB stores send is filtered in the database, not by reading
the collection: each store method is driven once against FerretDB with a PyMongo
CommandListener recording every filter sent (find, count, aggregate's $match, findAndModify,
update, delete), and each distinct filter's shape is asked FerretDB's `explain`.

FerretDB v1 on PostgreSQL filters in PostgreSQL ("pushes down") only equalities and `$ne` on
top-level scalar fields; anything else (`$in`, `$or`, ranges, `$exists`) it answers by reading
every document of the collection and filtering them itself, a cost linear in the collection
(measured: 300 ms for a 3,000-document `_id: {$in: [...]}`; `devstack.order_latency` shows
it on a whole order). PostgreSQL then scans with the pushed filter (FerretDB's `@>` tests use
no index), which costs microseconds a row; what must never happen per request is FerretDB
reading the collection. So a filter passes when FerretDB pushes it down on a SELECTIVE set of
keys (an id, or keys whose documents are few); the queries that select by nature many
documents are named, with why and MongoDB's index, in SCANS. explain answers for
`find` only (it reports no pushdown for the other commands, which push down exactly like
find: measured), so every filter is explained as a find.

On MongoDB (no FerretDB in buildInfo) the test is skipped: its explain reads differently.
"""

from __future__ import annotations

import inspect
import json
import re
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo import AsyncMongoClient, monitoring
from pymongo.asynchronous.database import AsyncDatabase

from petstore.order.v1 import order_pb2, order_service_pb2
from petstore.pet.v1 import pet_pb2
from petstore.user.v1 import user_pb2
from petstore_common.idempotency import MongoIdempotencyStore
from petstore_order.storage.base import Step, Transition
from petstore_order.storage.mongo import MongoOrderStore
from petstore_pet.events import Page
from petstore_pet.storage.base import PetImage
from petstore_pet.storage.mongo import MongoPetStore
from petstore_user.storage.base import Account, Session
from petstore_user.storage.mongo import MongoUserStore

Document = dict[str, Any]

SELECTIVE: tuple[tuple[str, ...], ...] = (
    ("_id",),
    ("user_id",),
    ("pet_id",),
    ("username",),
    ("username_key",),
    ("owner_user_id", "status"),
    ("sale_step",),
    ("has_events",),
)
"""Keys which, pushed down together, select one document or a few, the first by an equality:
an id, a pet's images or orders, a user's sessions and login sources, a customer's orders of
some status (the open-order count, on every customer's order: those not delivered, at most
MAX_OPEN_ORDERS_PER_CUSTOMER and a few racers), the orders whose sale is under way (sale
recovery: a settled order has no step), the pets and orders with unacknowledged events (the
webhook service acknowledges what it reads; at most a page's worth wait)."""

LISTING_PETS_BY_STATUS_OR_TAG = (
    'pets find {"$or": [{"status": {"$in": ["str"]}}, {"tags.name": {"$in": ["str"]}}], '
    '"_id": {"$gt": "int"}}'
)
LISTING_A_CUSTOMERS_ORDERS = (
    'orders find {"_id": {"$gt": "int"}, "owner_user_id": "int", "sale_step": {"$nin": ["str"]}}'
)
LISTING_PLACED_ORDERS = (
    'orders find {"$or": [{"status": "str"}, {"status": {"$exists": false}}], "_id": {"$gt": "int"}, '
    '"sale_step": {"$nin": ["str"]}}'
)

SCANS: dict[str, str] = {
    # pet service
    LISTING_PETS_BY_STATUS_OR_TAG: "findByStatus with findByTags' tags: a listing (MongoDB: the "
    "status and tags.name indexes, merged)",
    'pets find {"_id": {"$gt": "int"}, "status": {"$in": ["str"]}}': "findByStatus: a listing of "
    "every pet with those statuses (MongoDB: the status index)",
    'pets aggregate {"status": {"$exists": true}}': "GetInventory counts every pet by status, by "
    "nature all of them (MongoDB: the status index)",
    'pet_events delete {"deleted_at": {"$lte": "datetime"}}': "the purge of deleted pets' expired "
    "events, at most once an hour, by a DeletePet (few documents: emptied ones are removed)",
    # order service
    LISTING_A_CUSTOMERS_ORDERS: "ListOrders "
    "of a customer: FerretDB reads all that customer's orders (MongoDB: owner_user_id, status, _id)",
    'orders find {"_id": {"$gt": "int"}, "sale_step": {"$nin": ["str"]}}': "ListOrders by staff "
    "without a filter: every order in id order (MongoDB: the _id index, to the page's limit)",
    'orders find {"_id": {"$gt": "int"}, "sale_step": {"$nin": ["str"]}, "status": "str"}': "ListOrders "
    "by staff for one status: pushed down on a status many orders share (MongoDB: status, _id)",
    LISTING_PLACED_ORDERS: "ListOrders by staff for placed orders (an order stored without a status "
    "is placed too: an $or; MongoDB: status, _id)",
    "order_events find {}": "ReadOrderEvents: every document there is a deleted order's events "
    "still to read, all of them wanted (an emptied one is deleted; MongoDB: the _id index)",
    'order_events delete {"deleted_at": {"$lt": "datetime"}}': "the purge of deleted orders' events "
    "past their retention, at most once a minute, with sale recovery (MongoDB: reads order_events, "
    "which holds only those, as FerretDB does)",
    # user service
    'users find {"username_key": {"$exists": true}}': "the username-key backfill, once at startup",
    'users find {"username_key": {"$exists": false}}': "the username-key backfill, once at startup",
    'sessions delete {"expires_at": {"$lte": "datetime"}}': "the purge of expired sessions, at most "
    "once a minute, by a login (MongoDB: the expires_at index)",
    'login_sources delete {"failed_at": {"$lte": "float"}, "succeeded_at": {"$lte": "float"}}': "the "
    "purge of stale login sources, with the sessions' (MongoDB: the failed_at index)",
    # every service's idempotency records
    'idempotency_keys delete {"expires_at": {"$lte": "datetime"}}': "the purge of expired idempotency "
    "records, at most once an interval, by a keyed request (MongoDB: the expires_at index)",
}
"""Query shapes that FerretDB v1 answers by reading the collection, each with why that is
acceptable: a listing or count over many documents by nature, or background work. Every other
shape must be pushed down on SELECTIVE keys."""

NOT_QUERIES = frozenset({"ping", "ensure_indexes", "changes"})
"""Store members that send no filter of a stored document worth a plan (or, `changes`, a
change stream FerretDB has not)."""


@dataclass(frozen=True)
class Sent:
    database: str
    collection: str
    command: str
    filter: Document


class Recorder(monitoring.CommandListener):
    """The filter of every command sent, by collection."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        command = event.command
        name = event.command_name
        collection = command.get(name)
        filters: list[Document] = []
        if name == "find":
            filters = [command.get("filter", {})]
        elif name in ("count", "distinct", "findAndModify"):
            filters = [command.get("query", {})]
        elif name == "aggregate":
            filters = [stage["$match"] for stage in command.get("pipeline", [])[:1] if "$match" in stage]
        elif name == "update":
            filters = [statement["q"] for statement in command.get("updates", [])]
        elif name == "delete":
            filters = [statement["q"] for statement in command.get("deletes", [])]
        with self._lock:
            self.sent.extend(Sent(event.database_name, str(collection), name, dict(f)) for f in filters)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def shape(value: Any) -> Any:
    """The filter with its values replaced by their types; lists by their distinct types."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [
            json.loads(item) for item in sorted({json.dumps(shape(item), sort_keys=True) for item in value})
        ]
    if isinstance(value, bool) or value is None:
        return value  # $exists: true and a null are part of the shape
    for base in (str, int, float, bytes):
        if isinstance(value, base):  # an enum's value by its base type
            return base.__name__
    return type(value).__name__


def shape_name(sent: Sent) -> str:
    return f"{sent.collection} {sent.command} {json.dumps(shape(sent.filter), sort_keys=True)}"


# --- the database and the stores --------------------------------------------------------------


@pytest.fixture
async def recorded(mongodb_uri: str) -> AsyncIterator[tuple[AsyncDatabase[Document], Recorder]]:
    recorder = Recorder()
    client: AsyncMongoClient[Document] = AsyncMongoClient(
        mongodb_uri, serverSelectionTimeoutMS=3000, tz_aware=True, event_listeners=[recorder]
    )
    name = f"plans_{uuid.uuid4().hex[:12]}"
    try:
        build = await client.admin.command("buildInfo")
        if "ferretdb" not in json.dumps(build, default=str).lower():
            pytest.skip("explain is read as FerretDB v1 answers it: the server is not FerretDB")
        yield client[name], recorder
    finally:
        await client.drop_database(name)
        await client.close()


class Driven:
    """Calls store methods by name and remembers which were called."""

    def __init__(self, store: object) -> None:
        self.store = store
        self.called: set[str] = set()

    async def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self.called.add(method)
        return await getattr(self.store, method)(*args, **kwargs)

    def missed(self) -> set[str]:
        public = {
            name
            for name, member in inspect.getmembers(type(self.store))
            if not name.startswith("_") and inspect.iscoroutinefunction(member)
        }
        return public - self.called - NOT_QUERIES


async def drive_pets(database: AsyncDatabase[Document]) -> Driven:
    call = Driven(MongoPetStore(database))
    await call("ensure_indexes")
    await call("new_id")
    pet = await call("create", pet_pb2.Pet(name="rex", status=pet_pb2.PET_STATUS_AVAILABLE))
    other = await call("create", pet_pb2.Pet(id=pet.id + 100, name="tom"))
    await call("get", pet.id)
    await call("existing", [pet.id, other.id, 999_999])
    await call("update", pet_pb2.Pet(id=pet.id, name="rex2"), ["name"])
    await call("holder", pet.id)
    await call("reserve", pet.id, 7)
    await call("sell", pet.id, 7)
    await call("release", pet.id, 7)
    await call("reserve", other.id, 8)
    await call("release", other.id, 8)
    await call("read_events", Page(10))
    await call("ack_events", {pet.id: 1})  # some of a stored pet's
    await call("ack_events", {pet.id: 3})  # the rest
    await call("find", statuses=[pet_pb2.PET_STATUS_AVAILABLE], tag_names=[], after_id=0, limit=10)
    await call("find", statuses=[pet_pb2.PET_STATUS_AVAILABLE], tag_names=["a"], after_id=0, limit=10)
    await call("count_by_status")
    image = PetImage("img-1", other.id, "image/png", b"x", "", "x.png")
    await call("add_image", image, max_images=5)
    await call("get_image", other.id, "img-1")
    await call("list_images", other.id)
    await call("delete_image", "img-1")
    await call("delete", other.id)  # its events move to pet_events
    await call("read_events", Page(10))
    await call("ack_events", {other.id: 2})  # a deleted pet's, its document removed
    await call("purge_deleted_events", older_than=timedelta(days=7))
    await drive_idempotency(MongoIdempotencyStore(database["idempotency_keys"]))
    return call


async def drive_orders(database: AsyncDatabase[Document]) -> Driven:
    call = Driven(MongoOrderStore(database))
    now = datetime.now(UTC)
    await call("ensure_indexes")
    await call("new_id")
    order = await call(
        "create", order_pb2.Order(pet_id=1, quantity=1, owner_user_id=5), step=Step.RESERVE, at=now
    )
    placed = Transition(
        step_from=Step.RESERVE, step_to=None, holds_pet=True, event=order_service_pb2.ORDER_EVENT_TYPE_PLACED
    )
    await call("transition", order.id, placed, at=now)
    await call("get", order.id)
    await call("get_stored", order.id)
    await call("unsettled", recorded_before=now, limit=10)
    open_statuses = [order_pb2.ORDER_STATUS_PLACED, order_pb2.ORDER_STATUS_APPROVED]
    for statuses, pet_id, owner in [
        (open_statuses, None, 5),  # the open-order count, on every customer's order
        ([], None, 5),
        ([], 1, None),
        ([], None, None),
        ([order_pb2.ORDER_STATUS_APPROVED], None, None),
        ([order_pb2.ORDER_STATUS_PLACED], None, None),
    ]:
        await call("find", statuses=statuses, pet_id=pet_id, owner_user_id=owner, after_id=0, limit=10)
    # The event outbox: read from orders, acknowledged there; a deleted order's moved aside,
    # read and acknowledged there (partly, then emptied).
    await call("read_events", limit=10)
    await call("ack_events", order.id, 1)
    await call("delete", order.id, only_if=order_pb2.ORDER_STATUS_PLACED)
    gone = await call(
        "create",
        order_pb2.Order(pet_id=2, quantity=1),
        at=now,
        event=order_service_pb2.ORDER_EVENT_TYPE_PLACED,
    )
    hidden = Transition(
        step_from=None, step_to=Step.RELEASE, event=order_service_pb2.ORDER_EVENT_TYPE_DELETED
    )
    await call("transition", gone.id, hidden, at=now)
    await call("delete", gone.id, step=Step.RELEASE)
    await call("read_events", limit=10)
    await call("ack_events", gone.id, 1)
    await call("purge_deleted_events", older_than=timedelta(days=7))
    await call("ack_events", gone.id, 2)
    return call


async def drive_users(database: AsyncDatabase[Document]) -> Driven:
    call = Driven(MongoUserStore(database))
    now = datetime.now(UTC)
    await call("ensure_indexes")

    def account(name: str, **fields: Any) -> Account:
        return Account(user_pb2.User(username=name, email=f"{name}@example.com", **fields), "hash")

    user = await call("create", account("ann"))
    await call("create_many", [account("bob"), account("cid", id=user.id + 50)])
    await call("get", "ann")
    await call("get_account", "ANN")  # found by its key
    await call("update", user.id, "ann", user_pb2.User(username="ann", first_name="A"), None)
    await call("replace_password_hash", user.id, "hash", "hash2")
    await call("record_login_failure", user.id, 1.0, 0.0)
    await call("clear_login_failures", user.id)
    await call("login_source", user.id, "src")
    await call("record_source_failure", user.id, "src", 1.0, 0.0)
    await call("record_source_success", user.id, "src", 2.0)
    await call("delete_stale_login_sources", 0.0, 0.0)
    await call("spend_password_change", user.id, 1.0, 60.0, 3)
    await call("add_session", Session("s1", user.id, now + timedelta(hours=1)), "hash2")
    await call("is_session_active", "s1", now)
    await call("end_session", "s1")
    await call("end_sessions_of", user.id, keep="s2")
    await call("delete_expired_sessions", now)
    await call("delete", user.id, "ann")
    return call


async def drive_idempotency(store: MongoIdempotencyStore) -> None:
    now = datetime.now(UTC)
    await store.claim("scope key", "fp", "me", now, timedelta(hours=1))
    await store.renew("scope key", "me", now)
    await store.reserve("scope key", "me", (1,))
    await store.complete("scope key", "me", b"done")
    await store.claim("scope key", "fp", "me", now, timedelta(hours=1))  # a replay reads it
    await store.claim("scope key2", "fp", "me", now, timedelta(hours=1))
    await store.abandon("scope key2", "me")
    await store.claim("scope key3", "fp", "me", now, timedelta(hours=1))
    await store.release("scope key3", "me")
    await store.purge(now)


# --- the judgement ------------------------------------------------------------------------------

PUSHED_KEY = re.compile(r"-> '([^']+)'::text\)")
"""A top-level key FerretDB wrote into PostgreSQL's filter (`_jsonb -> 'key'`)."""


async def verdict(database: AsyncDatabase[Document], sent: Sent) -> str | None:
    """Why `sent` reads more than a few documents on FerretDB; None when PostgreSQL filters it
    on a SELECTIVE set of keys."""
    explained = await database.command("explain", {"find": sent.collection, "filter": sent.filter})
    if not explained.get("filterPushdown"):
        return "not pushed down: FerretDB reads every document and filters them itself"
    pushed = set(PUSHED_KEY.findall(json.dumps(explained.get("queryPlanner", {})))) - {"$s"}
    for keys in SELECTIVE:
        equality = sent.filter.get(keys[0])
        if set(keys) <= pushed and equality is not None and not isinstance(equality, dict | list):
            return None
    return f"pushed down only on {sorted(pushed)}: none of {[list(keys) for keys in SELECTIVE]}"


async def judge(client: AsyncMongoClient[Document], recorder: Recorder) -> tuple[dict[str, str], set[str]]:
    """The shapes that read a whole collection without being in SCANS (shape -> why), and
    every shape seen."""
    distinct: dict[str, Sent] = {}
    for sent in recorder.sent:
        distinct.setdefault(shape_name(sent), sent)
    offenders = {}
    for name, sent in distinct.items():
        reason = await verdict(client[sent.database], sent)
        if reason is not None and name not in SCANS:
            offenders[name] = reason
    return offenders, set(distinct)


async def test_every_store_method_is_driven_and_every_query_is_filtered_in_the_database(
    recorded: tuple[AsyncDatabase[Document], Recorder],
) -> None:
    database, recorder = recorded
    client = database.client
    driven = [
        await drive_pets(client[f"{database.name}_pet"]),
        await drive_orders(client[f"{database.name}_order"]),
        await drive_users(client[f"{database.name}_user"]),
    ]
    try:
        missed = {type(call.store).__name__: sorted(call.missed()) for call in driven if call.missed()}
        assert not missed, f"store methods this test does not drive (add them): {missed}"
        recorder.sent = [sent for sent in recorder.sent if sent.database.startswith(database.name)]
        offenders, seen = await judge(client, recorder)
        assert not offenders, "queries FerretDB answers by reading the collection:\n" + "\n".join(
            f"  {name}: {reason}" for name, reason in sorted(offenders.items())
        )
        stale = set(SCANS) - seen
        assert not stale, f"SCANS names shapes no store sends any more (remove them): {sorted(stale)}"
    finally:
        for suffix in ("_pet", "_order", "_user"):
            await client.drop_database(f"{database.name}{suffix}")
