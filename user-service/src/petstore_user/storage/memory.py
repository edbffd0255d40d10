"""The embedded store used when no MONGODB_URI is given (development, tests).

No method awaits while it reads or writes, so on one event loop each call is atomic: that is
what makes usernames unique here, as the unique index does in MongoDB.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from petstore.user.v1 import user_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_common.idempotency import MemoryIdempotencyStore
from petstore_common.versions import FIRST_VERSION, check_version
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


@dataclass(slots=True)
class _StoredSession:
    user_id: int
    expires_at: datetime
    ended: bool = False


class MemoryUserStore:
    def __init__(self) -> None:
        self._accounts: dict[int, Account] = {}
        self._ids_by_username: dict[str, int] = {}
        """Keyed by username_key: one entry per name whatever its case."""
        self._sessions: dict[str, _StoredSession] = {}
        self._failures: dict[int, LoginFailures] = {}
        self._sources: dict[tuple[int, str], LoginSource] = {}
        self._password_changes: dict[int, tuple[int, float]] = {}
        """Per user: password changes in the current window, and when it started."""
        self._retired_ids: set[int] = set()
        """Ids of deleted users: never given again."""
        self._last_assigned_id = 0
        self.idempotency = MemoryIdempotencyStore()

    async def ensure_indexes(self) -> None:
        """Nothing to index: the username dict is the index."""

    async def ping(self) -> None:
        """Always reachable."""

    async def create(self, account: Account) -> user_pb2.User:
        self._check_free(account.user)
        return self._insert(account)

    async def create_many(self, accounts: Sequence[Account]) -> list[user_pb2.User]:
        check_distinct([account.user for account in accounts])
        for index, account in enumerate(accounts):
            try:
                self._check_free(account.user)
            except AlreadyExists as exc:
                raise AlreadyExists(in_batch(index, exc.message)) from None
        return [self._insert(account) for account in accounts]

    async def get(self, username: str) -> user_pb2.User:
        return _copy(self._stored(username).user)

    async def get_account(self, username: str) -> Account:
        stored = self._stored(username)
        failures = self._failures.get(stored.user.id, NO_FAILURES)
        return Account(_copy(stored.user), stored.password_hash, failures)

    async def update(
        self,
        user_id: int,
        username: str,
        user: user_pb2.User,
        password_hash: str | None,
        *,
        accepted_versions: Collection[int] | None = None,
    ) -> user_pb2.User:
        stored = self._accounts.get(user_id)
        if stored is None or stored.user.username != username:
            raise NotFound(not_found(username))
        check_version(stored.user.version, accepted_versions, f"user {username}")
        if self._ids_by_username.get(username_key(user.username), user_id) != user_id:
            raise AlreadyExists(username_taken(user.username))
        replacement = _copy(user)
        replacement.id = user_id
        replacement.version = stored.user.version + 1
        del self._ids_by_username[username_key(username)]
        self._ids_by_username[username_key(replacement.username)] = user_id
        self._accounts[user_id] = Account(
            replacement, stored.password_hash if password_hash is None else password_hash
        )
        return _copy(replacement)

    async def replace_password_hash(self, user_id: int, old_hash: str, new_hash: str) -> None:
        stored = self._accounts.get(user_id)
        if stored is not None and stored.password_hash == old_hash:
            self._accounts[user_id] = Account(stored.user, new_hash)

    async def delete(self, user_id: int, username: str) -> None:
        stored = self._accounts.get(user_id)
        if stored is None or stored.user.username != username:
            raise NotFound(not_found(username))
        del self._accounts[user_id]
        del self._ids_by_username[username_key(username)]
        self._failures.pop(user_id, None)
        self._password_changes.pop(user_id, None)
        for key in [key for key in self._sources if key[0] == user_id]:
            del self._sources[key]
        self._retired_ids.add(user_id)
        await self.end_sessions_of(user_id)

    async def record_login_failure(self, user_id: int, now: float, forget_before: float) -> LoginFailures:
        if user_id not in self._accounts:
            return NO_FAILURES
        earlier = self._failures.get(user_id, NO_FAILURES)
        count = earlier.count + 1 if earlier.last_at > forget_before else 1
        self._failures[user_id] = LoginFailures(count, now)
        return self._failures[user_id]

    async def clear_login_failures(self, user_id: int) -> None:
        self._failures.pop(user_id, None)

    async def login_source(self, user_id: int, source: str) -> LoginSource:
        return self._sources.get((user_id, source), NEW_SOURCE)

    async def record_source_failure(
        self, user_id: int, source: str, now: float, forget_before: float
    ) -> LoginFailures:
        if user_id not in self._accounts:
            return NO_FAILURES
        earlier = self._sources.get((user_id, source), NEW_SOURCE)
        count = earlier.failures.count + 1 if earlier.failures.last_at > forget_before else 1
        self._sources[user_id, source] = LoginSource(LoginFailures(count, now), earlier.succeeded_at)
        return self._sources[user_id, source].failures

    async def record_source_success(self, user_id: int, source: str, now: float) -> None:
        if user_id in self._accounts:
            self._sources[user_id, source] = LoginSource(NO_FAILURES, now)

    async def delete_stale_login_sources(self, failed_before: float, succeeded_before: float) -> int:
        stale = [
            key
            for key, source in self._sources.items()
            if source.failures.last_at <= failed_before and source.succeeded_at <= succeeded_before
        ]
        for key in stale:
            del self._sources[key]
        return len(stale)

    async def spend_password_change(self, user_id: int, now: float, window_seconds: float, limit: int) -> int:
        if user_id not in self._accounts:
            return 0
        count, since = self._password_changes.get(user_id, (0, now))
        if since <= now - window_seconds:
            count, since = 0, now
        if count >= limit:
            return max(1, math.ceil(since + window_seconds - now))
        self._password_changes[user_id] = (count + 1, since)
        return 0

    async def add_session(self, session: Session, password_hash: str) -> None:
        stored = self._accounts.get(session.user_id)
        if stored is None or stored.password_hash != password_hash:
            raise NotFound(f"user {session.user_id} not found")
        self._sessions[session.session_id] = _StoredSession(session.user_id, session.expires_at)

    async def end_sessions_of(self, user_id: int, *, keep: str = "") -> None:
        ended = [i for i, session in self._sessions.items() if session.user_id == user_id and i != keep]
        for session_id in ended:
            del self._sessions[session_id]

    async def is_session_active(self, session_id: str, now: datetime) -> bool:
        session = self._sessions.get(session_id)
        return session is not None and not session.ended and session.expires_at > now

    async def end_session(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.ended = True

    async def delete_expired_sessions(self, now: datetime) -> int:
        expired = [i for i, session in self._sessions.items() if session.expires_at <= now]
        for session_id in expired:
            del self._sessions[session_id]
        return len(expired)

    def _stored(self, username: str) -> Account:
        user_id = self._ids_by_username.get(username_key(username))
        if user_id is None:
            raise NotFound(not_found(username))
        return self._accounts[user_id]

    def _check_free(self, user: user_pb2.User) -> None:
        if user.HasField("id") and (user.id in self._accounts or user.id in self._retired_ids):
            raise AlreadyExists(id_taken(user.id))
        if username_key(user.username) in self._ids_by_username:
            raise AlreadyExists(username_taken(user.username))

    def _insert(self, account: Account) -> user_pb2.User:
        stored = _copy(account.user)
        stored.version = FIRST_VERSION
        if not stored.HasField("id"):
            # Like the Mongo counter: draw the next number, skipping ids staff chose and retired ones.
            stored.id = next(
                i
                for i in itertools.count(self._last_assigned_id + 1)
                if i not in self._accounts and i not in self._retired_ids
            )
            self._last_assigned_id = stored.id
        self._accounts[stored.id] = Account(stored, account.password_hash)
        self._ids_by_username[username_key(stored.username)] = stored.id
        return _copy(stored)


def _copy(user: user_pb2.User) -> user_pb2.User:
    copy = user_pb2.User()
    copy.CopyFrom(user)
    return copy
