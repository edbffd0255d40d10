"""The embedded store used when no MONGODB_URI is given (development, tests).

No method awaits while it reads or writes, so on one event loop each call is atomic: that is
what makes usernames unique here, as the unique index does in MongoDB.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from petstore.user.v1 import user_pb2
from petstore_common.errors import AlreadyExists, NotFound
from petstore_common.idempotency import MemoryIdempotencyStore
from petstore_common.versions import FIRST_VERSION, check_version
from petstore_user.storage.base import (
    NO_FAILURES,
    Account,
    LoginFailures,
    Session,
    check_distinct,
    id_taken,
    in_batch,
    not_found,
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
        self._sessions: dict[str, _StoredSession] = {}
        self._failures: dict[int, LoginFailures] = {}
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
        if user.username != username and user.username in self._ids_by_username:
            raise AlreadyExists(username_taken(user.username))
        replacement = _copy(user)
        replacement.id = user_id
        replacement.version = stored.user.version + 1
        del self._ids_by_username[username]
        self._ids_by_username[replacement.username] = user_id
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
        del self._ids_by_username[username]
        self._failures.pop(user_id, None)
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

    async def add_session(self, session: Session, password_hash: str) -> None:
        stored = self._accounts.get(session.user_id)
        if stored is None or stored.password_hash != password_hash:
            raise NotFound(f"user {session.user_id} not found")
        self._sessions[session.session_id] = _StoredSession(session.user_id, session.expires_at)

    async def end_sessions_of(self, user_id: int) -> None:
        for session_id in [i for i, session in self._sessions.items() if session.user_id == user_id]:
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
        user_id = self._ids_by_username.get(username)
        if user_id is None:
            raise NotFound(not_found(username))
        return self._accounts[user_id]

    def _check_free(self, user: user_pb2.User) -> None:
        if user.HasField("id") and (user.id in self._accounts or user.id in self._retired_ids):
            raise AlreadyExists(id_taken(user.id))
        if user.username in self._ids_by_username:
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
        self._ids_by_username[stored.username] = stored.id
        return _copy(stored)


def _copy(user: user_pb2.User) -> user_pb2.User:
    copy = user_pb2.User()
    copy.CopyFrom(user)
    return copy
