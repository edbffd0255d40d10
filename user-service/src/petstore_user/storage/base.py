"""The storage contract both stores fulfil; protobuf `User` messages are the currency.

Password hashes travel beside users (in `Account`), never inside a `User`: a `User` is what
clients may see, so nothing a store returns as a `User` can leak a hash.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from petstore.user.v1 import user_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.idempotency import IdempotencyStore


@dataclass(frozen=True, slots=True)
class LoginFailures:
    """Wrong passwords given for one account since its last login (or since they were
    forgotten), and when the last one was (seconds since the epoch)."""

    count: int = 0
    last_at: float = 0.0


NO_FAILURES = LoginFailures()


@dataclass(frozen=True, slots=True)
class LoginSource:
    """What one source (a digest of a client address) did at one account: its wrong passwords
    since its last good one, and when it last logged in (epoch seconds, 0: never)."""

    failures: LoginFailures = NO_FAILURES
    succeeded_at: float = 0.0


NEW_SOURCE = LoginSource()


@dataclass(frozen=True, slots=True)
class Account:
    """A user and the argon2 hash of its password (stores never see a password)."""

    user: user_pb2.User
    password_hash: str = field(repr=False)
    failures: LoginFailures = NO_FAILURES
    """Read with the account (what a new account is given is ignored)."""


@dataclass(frozen=True, slots=True)
class Session:
    """A login session: the token's jti, whose it is and when it stops working."""

    session_id: str
    user_id: int
    expires_at: datetime
    """Timezone-aware; the session is active strictly before this instant (like the token's exp)."""


def username_key(username: str) -> str:
    """What usernames are unique by and found by: NFKC-normalized and case-folded, so `Bob`
    and `bob` are one name (for today's ASCII pattern this is casefold(); the normalization
    keeps the rule sound should the pattern ever admit more)."""
    return unicodedata.normalize("NFKC", username).casefold()


def not_found(username: str) -> str:
    return f"user {username} not found"


def username_taken(username: str) -> str:
    return f"username {username} is taken"


def id_taken(user_id: int) -> str:
    return f"user id {user_id} is taken"


def in_batch(index: int, message: str) -> str:
    """An error about one user of a CreateUsers batch names it by its position."""
    return f"users[{index}]: {message}"


def check_distinct(users: Sequence[user_pb2.User]) -> None:
    """A batch may not name the same username (whatever its case) or client-chosen id twice
    (InvalidArgument)."""
    usernames: set[str] = set()
    ids: set[int] = set()
    for index, user in enumerate(users):
        key = username_key(user.username)
        if key in usernames:
            raise InvalidArgument(in_batch(index, "duplicate username"))
        usernames.add(key)
        if user.HasField("id"):
            if user.id in ids:
                raise InvalidArgument(in_batch(index, "duplicate id"))
            ids.add(user.id)


class UserStore(Protocol):
    """Users keyed by a positive integer id and by their username, unique and found without
    regard to case (username_key), and login sessions.

    Every method raises petstore_common.errors exceptions with a client-safe message; stored
    and returned users are copies, never shared with the caller.
    """

    @property
    def idempotency(self) -> IdempotencyStore:
        """Idempotency records of sign-ups, in the same database."""

    async def ensure_indexes(self) -> None:
        """Create the indexes uniqueness and the queries need (idempotent)."""

    async def ping(self) -> None:
        """Raise when the store cannot be reached."""

    async def create(self, account: Account) -> user_pb2.User:
        """Store a new user under its own id or, without one, a fresh id.

        AlreadyExists when the username (by its key) or the id is taken, decided atomically by the store
        (concurrent creates of one username: exactly one succeeds). An id stays taken after
        its user is deleted: no id ever names two accounts, so nothing that names a deleted
        user's id (its orders, its idempotency records) can pass to a newcomer.
        """

    async def create_many(self, accounts: Sequence[Account]) -> list[user_pb2.User]:
        """Store every user, in order, or none of them.

        The error names the first user rejected: InvalidArgument("users[i]: duplicate
        username") for a repeat within the batch, AlreadyExists("users[i]: username u is
        taken") for a username (or id) already stored.
        """

    async def get(self, username: str) -> user_pb2.User:
        """The user with this username, whatever its case; NotFound when absent. (Where two
        stored before the rule differ only in case, the exact one.)"""

    async def get_account(self, username: str) -> Account:
        """The user with this username (as `get`) and its password hash; NotFound when absent."""

    async def update(
        self,
        user_id: int,
        username: str,
        user: user_pb2.User,
        password_hash: str | None,
        *,
        accepted_versions: Collection[int] | None = None,
    ) -> user_pb2.User:
        """Replace every field but the id of the user `user_id` still named `username`, and
        give it the next version (a user is created with FIRST_VERSION).

        The password hash changes only when one is given. NotFound when no user has both
        (deleted or renamed since the caller read it); AlreadyExists when `user.username`
        is another user's, whatever its case; with `accepted_versions`, FailedPrecondition
        (nothing changed) when the stored version is not one of them, checked atomically with
        the write.
        """

    async def replace_password_hash(self, user_id: int, old_hash: str, new_hash: str) -> None:
        """Swap the hash for a stronger one, unless the password changed in the meantime."""

    async def delete(self, user_id: int, username: str) -> None:
        """Remove the user `user_id` still named `username`, and its sessions; NotFound when none.
        The username is free again; the id is retired for good."""

    async def record_login_failure(self, user_id: int, now: float, forget_before: float) -> LoginFailures:
        """Count one more wrong password for the user, starting again from one when the last
        was at or before `forget_before`; the count as stored (NO_FAILURES when the user is gone)."""

    async def clear_login_failures(self, user_id: int) -> None:
        """Forget the user's wrong passwords."""

    async def login_source(self, user_id: int, source: str) -> LoginSource:
        """What `source` (an address digest) did at the user's account (NEW_SOURCE: nothing)."""

    async def record_source_failure(
        self, user_id: int, source: str, now: float, forget_before: float
    ) -> LoginFailures:
        """Count one more wrong password from `source` at the user, starting again from one
        when its last was at or before `forget_before`; the source's count as stored."""

    async def record_source_success(self, user_id: int, source: str, now: float) -> None:
        """`source` logged in to the user at `now`: its wrong passwords are forgotten."""

    async def delete_stale_login_sources(self, failed_before: float, succeeded_before: float) -> int:
        """Forget sources whose last failure is at or before `failed_before` and whose last
        login is at or before `succeeded_before`; returns how many."""

    async def spend_password_change(self, user_id: int, now: float, window_seconds: float, limit: int) -> int:
        """Take one of the user's `limit` password changes per window (a window starts at
        the first change after the last one ended): 0 when taken, else the whole seconds until
        the window ends (nothing taken). 0 for an absent user (its update fails anyway)."""

    async def add_session(self, session: Session, password_hash: str) -> None:
        """Store a session of an existing user whose password hash is still `password_hash`;
        NotFound when that user is gone or its password changed since it was checked (so no
        session outlives a concurrent delete or password change)."""

    async def end_sessions_of(self, user_id: int, *, keep: str = "") -> None:
        """Forget every session of the user (its password changed) but the one `keep` names."""

    async def is_session_active(self, session_id: str, now: datetime) -> bool:
        """True when the session is stored, not ended and expires after `now`."""

    async def end_session(self, session_id: str) -> None:
        """Mark the session ended; nothing happens for an unknown or ended one."""

    async def delete_expired_sessions(self, now: datetime) -> int:
        """Forget sessions that expired at or before `now`; returns how many."""
