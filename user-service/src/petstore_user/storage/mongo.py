"""The MongoDB store (PyMongo's async API): collections users, sessions and counters.

FerretDB has no transactions and no TTL indexes, so nothing here relies on either: username
uniqueness is the unique index's job, a batch is undone by hand, and expired sessions are
deleted by `delete_expired_sessions`.

A deleted user's document is replaced by a tombstone (documents.retired_document) that keeps
its `_id`: the id stays taken, so neither a staff create nor the id counter can give it again.

Usernames are unique by `username_key` (base.username_key: case-folded), under a unique index.
Documents stored before that key existed get it at startup (ensure_indexes). Two such accounts
whose names differ only in case cannot share a key: the older (lower id) keeps it, the other is
given `<key>#<id>` (no username holds `#`, so no new name can collide with it) and a warning is
logged with both ids. Both stay reachable: a look-up prefers the exact username, then the key.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Collection, Sequence
from datetime import datetime

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, OperationFailure

from petstore.user.v1 import user_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_common.idempotency import MongoIdempotencyStore
from petstore_common.mongo import (
    IdAllocator,
    KeyedLocks,
    duplicate_key_field,
    insert_with_new_id,
    ping,
    update_versioned,
)
from petstore_common.versions import VERSION_KEY
from petstore_user.storage.base import (
    NEW_SOURCE,
    NO_FAILURES,
    Account,
    LoginFailures,
    LoginSource,
    Session,
    check_distinct,
    id_taken,
    in_batch,
    not_found,
    username_key,
    username_taken,
)
from petstore_user.storage.documents import (
    FAILURES_AT_KEY,
    FAILURES_KEY,
    LIVE,
    PASSWORD_CHANGES_KEY,
    PASSWORD_CHANGES_SINCE_KEY,
    USERNAME_KEY,
    Document,
    account_from_document,
    account_to_document,
    failures_from_document,
    retired_document,
    session_to_document,
    user_fields,
    user_from_document,
)

log = logging.getLogger(__name__)

USER_ID_COUNTER = "users"


class MongoUserStore:
    """Users are documents whose `_id` is the user id; `username` has a unique index."""

    def __init__(self, database: AsyncDatabase[Document]) -> None:
        self._database = database
        self._users = database["users"]
        self._sessions = database["sessions"]
        self._sources = database["login_sources"]
        """One document per (user, source digest): `_id` "<user id>:<digest>"."""
        self._ids = IdAllocator(database["counters"], USER_ID_COUNTER)
        self.idempotency = MongoIdempotencyStore(database["idempotency_keys"])
        self._writing = KeyedLocks()

    async def ensure_indexes(self) -> None:
        await self.idempotency.ensure_indexes()
        await self._users.create_index("username", unique=True)
        await self._backfill_username_keys()
        await self._users.create_index(USERNAME_KEY, unique=True)
        await self._sessions.create_index("user_id")
        await self._sessions.create_index("expires_at")
        await self._sources.create_index("user_id")
        await self._sources.create_index("failed_at")

    async def _backfill_username_keys(self) -> None:
        """Give every document written before usernames had keys its key (see the module)."""
        owners: dict[str, int] = {}
        keyed = self._users.find({USERNAME_KEY: {"$exists": True}}, projection={USERNAME_KEY: 1})
        async for document in keyed:
            owners[document[USERNAME_KEY]] = document["_id"]
        missing = self._users.find({USERNAME_KEY: {"$exists": False}}, projection={"username": 1})
        async for document in missing.sort("_id", 1):
            key = username_key(document["username"])
            if key in owners:
                log.warning(
                    "usernames differ only in case: user %s keeps the name's key, user %s is "
                    "found by its exact username only",
                    owners[key],
                    document["_id"],
                )
                key = f"{key}#{document['_id']}"
            owners[key] = document["_id"]
            await self._users.update_one(
                {"_id": document["_id"], USERNAME_KEY: {"$exists": False}}, {"$set": {USERNAME_KEY: key}}
            )

    async def ping(self) -> None:
        await ping(self._database.client)

    async def create(self, account: Account) -> user_pb2.User:
        document = account_to_document(account)
        try:
            if "_id" in document:
                await self._users.insert_one(document)
            else:
                document = await insert_with_new_id(
                    self._users, self._ids, lambda new_id: {"_id": new_id, **document}
                )
        except DuplicateKeyError as exc:
            raise await self._conflict(exc, account.user) from None
        return user_from_document(document)

    async def create_many(self, accounts: Sequence[Account]) -> list[user_pb2.User]:
        check_distinct([account.user for account in accounts])
        await self._check_none_taken(accounts)
        # No transactions (FerretDB has none): insert one by one and undo on any failure.
        # A reader may glimpse part of a batch that is then undone; if the database is lost
        # mid-way the undo fails too and the inserted part stays (the client sees UNAVAILABLE).
        created: list[user_pb2.User] = []
        try:
            for index, account in enumerate(accounts):
                try:
                    created.append(await self.create(account))
                except AlreadyExists as exc:  # taken by a concurrent create since the check
                    raise AlreadyExists(in_batch(index, exc.message)) from None
        except BaseException:
            if created:
                # One id at a time (equalities FerretDB v1 filters in PostgreSQL; `$in` it does not).
                for user in created:
                    await self._users.delete_one({"_id": user.id})
                    await self._sessions.delete_many({"user_id": user.id})  # a login may have been quick
            raise
        return created

    async def get(self, username: str) -> user_pb2.User:
        return user_from_document(await self._find(username))

    async def get_account(self, username: str) -> Account:
        return account_from_document(await self._find(username))

    async def update(
        self,
        user_id: int,
        username: str,
        user: user_pb2.User,
        password_hash: str | None,
        *,
        accepted_versions: Collection[int] | None = None,
    ) -> user_pb2.User:
        changes = user_fields(user)
        if user.username == username:
            del changes[USERNAME_KEY]  # kept as stored (see the module: a collision's key stays)
        if password_hash is not None:
            changes["password_hash"] = password_hash
        async with self._writing.hold(user_id):  # see KeyedLocks: FerretDB's updates are two steps
            try:
                stored, version = await update_versioned(
                    self._users,
                    {"_id": user_id, "username": username},
                    lambda _stored: {"$set": dict(changes)},
                    missing=lambda: NotFound(not_found(username)),
                    what=f"user {username}",
                    accepted_versions=accepted_versions,
                )
            except OperationFailure as exc:
                if not _violates_unique_index(exc):
                    raise
                # `_id` does not change: the username index is the one violated.
                raise AlreadyExists(username_taken(user.username)) from None
        return user_from_document(stored | changes | {VERSION_KEY: version})

    async def replace_password_hash(self, user_id: int, old_hash: str, new_hash: str) -> None:
        await self._users.update_one(
            {"_id": user_id, "password_hash": old_hash}, {"$set": {"password_hash": new_hash}}
        )

    async def delete(self, user_id: int, username: str) -> None:
        # (FerretDB's findAndModify takes no projection.)
        replaced = await self._users.find_one_and_replace(
            {"_id": user_id, "username": username, **LIVE}, retired_document(user_id)
        )
        if replaced is None:
            raise NotFound(not_found(username))
        await self.end_sessions_of(user_id)
        await self._sources.delete_many({"user_id": user_id})

    async def record_login_failure(self, user_id: int, now: float, forget_before: float) -> LoginFailures:
        recent: Document = {"_id": user_id, **LIVE, FAILURES_AT_KEY: {"$gt": forget_before}}
        forgotten: Document = {
            "_id": user_id,
            **LIVE,
            "$or": [{FAILURES_AT_KEY: {"$lte": forget_before}}, {FAILURES_AT_KEY: {"$exists": False}}],
        }
        async with self._writing.hold(user_id):  # FerretDB's $inc is a read and a write
            for _ in range(2):  # a concurrent failure may move the user from one case to the other
                counted = await self._users.find_one_and_update(
                    recent,
                    {"$inc": {FAILURES_KEY: 1}, "$set": {FAILURES_AT_KEY: now}},
                    return_document=ReturnDocument.AFTER,
                )
                if counted is None:
                    counted = await self._users.find_one_and_update(
                        forgotten,
                        {"$set": {FAILURES_KEY: 1, FAILURES_AT_KEY: now}},
                        return_document=ReturnDocument.AFTER,
                    )
                if counted is not None:
                    return failures_from_document(counted)
        return NO_FAILURES

    async def clear_login_failures(self, user_id: int) -> None:
        await self._users.update_one(
            {"_id": user_id, FAILURES_KEY: {"$exists": True}},
            {"$unset": {FAILURES_KEY: "", FAILURES_AT_KEY: ""}},
        )

    async def login_source(self, user_id: int, source: str) -> LoginSource:
        document = await self._sources.find_one({"_id": _source_id(user_id, source)})
        if document is None:
            return NEW_SOURCE
        failures = LoginFailures(int(document["failures"]), float(document["failed_at"]))
        return LoginSource(failures if failures.count else NO_FAILURES, float(document["succeeded_at"]))

    async def record_source_failure(
        self, user_id: int, source: str, now: float, forget_before: float
    ) -> LoginFailures:
        if await self._users.find_one({"_id": user_id, **LIVE}, projection={"_id": 1}) is None:
            return NO_FAILURES
        source_id = _source_id(user_id, source)
        async with self._writing.hold(source_id):  # FerretDB's $inc is a read and a write
            earlier = await self.login_source(user_id, source)
            count = earlier.failures.count + 1 if earlier.failures.last_at > forget_before else 1
            await self._sources.update_one(
                {"_id": source_id},
                {
                    "$set": {"user_id": user_id, "failures": count, "failed_at": now},
                    "$setOnInsert": {"succeeded_at": 0.0},
                },
                upsert=True,
            )
        return LoginFailures(count, now)

    async def record_source_success(self, user_id: int, source: str, now: float) -> None:
        source_id = _source_id(user_id, source)
        async with self._writing.hold(source_id):
            await self._sources.update_one(
                {"_id": source_id},
                {"$set": {"user_id": user_id, "failures": 0, "failed_at": 0.0, "succeeded_at": now}},
                upsert=True,
            )

    async def delete_stale_login_sources(self, failed_before: float, succeeded_before: float) -> int:
        stale = {"failed_at": {"$lte": failed_before}, "succeeded_at": {"$lte": succeeded_before}}
        return (await self._sources.delete_many(stale)).deleted_count

    async def spend_password_change(self, user_id: int, now: float, window_seconds: float, limit: int) -> int:
        window_start = now - window_seconds
        current: Document = {
            "_id": user_id,
            **LIVE,
            PASSWORD_CHANGES_SINCE_KEY: {"$gt": window_start},
            PASSWORD_CHANGES_KEY: {"$lt": limit},
        }
        ended: Document = {
            "_id": user_id,
            **LIVE,
            "$or": [
                {PASSWORD_CHANGES_SINCE_KEY: {"$lte": window_start}},
                {PASSWORD_CHANGES_SINCE_KEY: {"$exists": False}},
            ],
        }
        async with self._writing.hold(user_id):  # FerretDB's $inc is a read and a write
            if await self._users.find_one_and_update(current, {"$inc": {PASSWORD_CHANGES_KEY: 1}}):
                return 0
            fresh = {"$set": {PASSWORD_CHANGES_KEY: 1, PASSWORD_CHANGES_SINCE_KEY: now}}
            if await self._users.find_one_and_update(ended, fresh):
                return 0
            document = await self._users.find_one({"_id": user_id, **LIVE})
        if document is None:
            return 0
        return max(1, math.ceil(float(document[PASSWORD_CHANGES_SINCE_KEY]) + window_seconds - now))

    async def add_session(self, session: Session, password_hash: str) -> None:
        await self._sessions.insert_one(session_to_document(session))
        # A delete or password change may have run since the caller checked the password: look
        # after the insert, so either this sees it or its end_sessions_of removes this session.
        still = {"_id": session.user_id, "password_hash": password_hash, **LIVE}
        if await self._users.find_one(still, projection={"_id": 1}) is None:
            await self._sessions.delete_one({"_id": session.session_id})
            raise NotFound(f"user {session.user_id} not found")

    async def end_sessions_of(self, user_id: int, *, keep: str = "") -> None:
        await self._sessions.delete_many({"user_id": user_id, "_id": {"$ne": keep}})

    async def is_session_active(self, session_id: str, now: datetime) -> bool:
        query: Document = {"_id": session_id, "ended": False, "expires_at": {"$gt": now}}
        return await self._sessions.find_one(query, projection={"_id": 1}) is not None

    async def end_session(self, session_id: str) -> None:
        await self._sessions.update_one({"_id": session_id}, {"$set": {"ended": True}})

    async def delete_expired_sessions(self, now: datetime) -> int:
        result = await self._sessions.delete_many({"expires_at": {"$lte": now}})
        return result.deleted_count

    async def _find(self, username: str) -> Document:
        """The exact username's user, else the one whose key it has (see the module). Two
        equalities in turn, not one `$or`: FerretDB v1 pushes no `$or` down and would read every
        user on each sign-in; both are unique-index look-ups on MongoDB."""
        found = await self._users.find_one({"username": username, **LIVE})
        if found is None:
            found = await self._users.find_one({USERNAME_KEY: username_key(username), **LIVE})
        if found is None:
            raise NotFound(not_found(username))
        return found

    async def _check_none_taken(self, accounts: Sequence[Account]) -> None:
        """AlreadyExists naming the first user whose username or id is stored already."""
        keys = sorted({username_key(account.user.username) for account in accounts})
        ids = sorted({account.user.id for account in accounts if account.user.HasField("id")})

        # One equality per key and per id, sent together, not `$in`s under an `$or`: FerretDB v1
        # pushes neither down and would read every user; on MongoDB each is an index look-up.
        async def taken(field: str, value: object) -> bool:
            return await self._users.find_one({field: value}, projection={"_id": 1}) is not None

        names_found, ids_found = await asyncio.gather(
            asyncio.gather(*(taken(USERNAME_KEY, key) for key in keys)),
            asyncio.gather(*(taken("_id", user_id) for user_id in ids)),
        )
        taken_names = {key for key, found in zip(keys, names_found, strict=True) if found}
        taken_ids = {user_id for user_id, found in zip(ids, ids_found, strict=True) if found}
        for index, account in enumerate(accounts):
            if account.user.HasField("id") and account.user.id in taken_ids:
                raise AlreadyExists(in_batch(index, id_taken(account.user.id)))
            if username_key(account.user.username) in taken_names:
                raise AlreadyExists(in_batch(index, username_taken(account.user.username)))

    async def _conflict(self, exc: DuplicateKeyError, user: user_pb2.User) -> AlreadyExists:
        """Which unique key a failed insert of `user` collided on, as the client's error."""
        field = duplicate_key_field(exc)
        if field is None and user.HasField("id"):
            # FerretDB does not name the violated index: the id was the conflict if it is taken.
            taken = await self._users.find_one({"_id": user.id}, projection={"_id": 1}) is not None
            field = "_id" if taken else "username"
        if field == "_id":
            return AlreadyExists(id_taken(user.id))
        # A fresh id that collided was retried by insert_with_new_id: only the username is left.
        return AlreadyExists(username_taken(user.username))


FERRETDB_UNIQUE_VIOLATIONS = (
    "UNIQUE constraint failed",  # its SQLite backend
    "(SQLSTATE 23505)",  # its PostgreSQL backend: unique_violation
)


def _violates_unique_index(exc: OperationFailure) -> bool:
    """MongoDB reports a unique index violation as DuplicateKeyError (E11000); FerretDB v1 does
    so for inserts only, and fails an update with InternalError carrying its backend's words
    (FERRETDB_UNIQUE_VIOLATIONS), leaving the document unchanged."""
    if isinstance(exc, DuplicateKeyError):
        return True
    return exc.code == 1 and any(words in str(exc) for words in FERRETDB_UNIQUE_VIOLATIONS)


def _source_id(user_id: int, source: str) -> str:
    return f"{user_id}:{source}"
