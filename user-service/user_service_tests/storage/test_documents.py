"""Document shapes: every user field by name, the hash beside them and never read into a User."""

from __future__ import annotations

from datetime import UTC, datetime

from petstore.user.v1 import user_pb2
from petstore_user.storage.base import Account, Session
from petstore_user.storage.documents import (
    account_from_document,
    account_to_document,
    session_to_document,
    user_fields,
    user_from_document,
)

USER = user_pb2.User(
    id=3,
    username="ann",
    first_name="Ann",
    last_name="Lee",
    email="ann@example.com",
    phone="555",
    user_status=2,
)


def test_an_account_becomes_a_document_and_back() -> None:
    document = account_to_document(Account(USER, "$argon2id$hash"))

    assert document == {
        "_id": 3,
        "username": "ann",
        "first_name": "Ann",
        "last_name": "Lee",
        "email": "ann@example.com",
        "phone": "555",
        "user_status": 2,
        "username_key": "ann",
        "password_hash": "$argon2id$hash",
        "version": 1,
    }
    read_back = account_from_document(document)
    expected = user_pb2.User()
    expected.CopyFrom(USER)
    expected.version = 1
    assert read_back.user == expected
    assert read_back.password_hash == "$argon2id$hash"


def test_a_document_from_before_versions_is_version_0() -> None:
    assert user_from_document({"_id": 3, "username": "ann"}).version == 0


def test_a_user_read_from_a_document_never_holds_the_hash() -> None:
    user = user_from_document({"_id": 3, "username": "ann", "password_hash": "$argon2id$hash"})

    assert user == user_pb2.User(id=3, username="ann")
    assert b"argon2" not in user.SerializeToString()


def test_a_user_without_id_has_no_id_key() -> None:
    document = account_to_document(Account(user_pb2.User(username="ann"), "h"))

    assert "_id" not in document
    assert user_fields(user_pb2.User(id=9, username="bob")) == {
        "username": "bob",
        "first_name": "",
        "last_name": "",
        "email": "",
        "phone": "",
        "user_status": 0,
        "username_key": "bob",
    }


def test_a_session_is_stored_open() -> None:
    expires_at = datetime(2030, 1, 1, tzinfo=UTC)

    assert session_to_document(Session("j" * 32, 3, expires_at)) == {
        "_id": "j" * 32,
        "user_id": 3,
        "expires_at": expires_at,
        "ended": False,
    }


def test_the_hash_stays_out_of_repr() -> None:
    assert "argon2" not in repr(Account(USER, "$argon2id$hash"))
