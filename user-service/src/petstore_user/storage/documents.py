"""The one place where users and sessions turn into MongoDB documents and back.

A user document holds the password hash beside the user's fields; `user_from_document`
never reads it, so a `User` built from a document cannot carry it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from petstore.user.v1 import user_pb2
from petstore_common.versions import FIRST_VERSION, VERSION_KEY
from petstore_user.storage.base import NO_FAILURES, Account, LoginFailures, Session, username_key

Document = dict[str, Any]

USER_FIELDS: tuple[str, ...] = ("username", "first_name", "last_name", "email", "phone", "user_status")
"""Every field of a user but the id (which is the document's `_id`) and the version."""
"""Set by the store on each write; absent in documents written before users had versions (0)."""
USERNAME_KEY = "username_key"
"""username_key(username), under a unique index: usernames are unique without regard to case.
Documents written before it have none until ensure_indexes backfills them."""
PASSWORD_CHANGES_KEY = "password_changes"  # noqa: S105 (a field name, no password)
PASSWORD_CHANGES_SINCE_KEY = "password_changes_since"  # noqa: S105
"""Password changes in the current window, and when it started (epoch seconds)."""
FAILURES_KEY = "login_failures"
FAILURES_AT_KEY = "login_failed_at"
"""Wrong passwords since the last login, and when the last was (epoch seconds); absent when none."""
RETIRED_KEY = "retired"
"""Set on the tombstone a deleted user leaves: it keeps the id taken and is no user."""
LIVE: Document = {RETIRED_KEY: {"$ne": True}}
"""The query clause that leaves tombstones out."""


def user_fields(user: user_pb2.User) -> Document:
    """The stored fields of a user, without its id: what an update replaces (with the key of
    its username)."""
    fields: Document = {name: getattr(user, name) for name in USER_FIELDS}
    fields[USERNAME_KEY] = username_key(user.username)
    return fields


def account_to_document(account: Account) -> Document:
    """A new user's document: its version is FIRST_VERSION whatever the message says."""
    document = user_fields(account.user)
    document["password_hash"] = account.password_hash
    document[VERSION_KEY] = FIRST_VERSION
    if account.user.HasField("id"):
        document["_id"] = account.user.id
    return document


def user_from_document(document: Mapping[str, Any]) -> user_pb2.User:
    user = user_pb2.User(id=document["_id"], version=document.get(VERSION_KEY, 0))
    for name in USER_FIELDS:
        if name in document:
            setattr(user, name, document[name])
    return user


def account_from_document(document: Mapping[str, Any]) -> Account:
    return Account(user_from_document(document), document["password_hash"], failures_from_document(document))


def failures_from_document(document: Mapping[str, Any]) -> LoginFailures:
    if FAILURES_KEY not in document:
        return NO_FAILURES
    return LoginFailures(int(document[FAILURES_KEY]), float(document.get(FAILURES_AT_KEY, 0.0)))


def retired_document(user_id: int) -> Document:
    """What a deleted user leaves: its id, and a username no client can send (usernames are
    letters, digits and . _ - @), unique as the index needs."""
    username = f"#retired/{user_id}"
    return {"_id": user_id, "username": username, USERNAME_KEY: username, RETIRED_KEY: True}


def session_to_document(session: Session) -> Document:
    return {
        "_id": session.session_id,
        "user_id": session.user_id,
        "expires_at": session.expires_at,
        "ended": False,
    }
