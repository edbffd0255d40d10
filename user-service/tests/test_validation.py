"""Values and bounds the service enforces, with the messages clients see."""

from __future__ import annotations

import re

import pytest

from petstore.user.v1 import user_pb2, user_service_pb2
from petstore_common.contract_bounds import MAX_USERS_PER_BATCH
from petstore_common.errors import InvalidArgument
from petstore_user import validation

PASSWORD = "a secret of some length"


def a_user(**fields: object) -> user_pb2.User:
    user = user_pb2.User(username="ann", email="ann@example.com")
    for name, value in fields.items():
        setattr(user, name, value)
    return user


def a_request(
    user: user_pb2.User | None = None, password: str = PASSWORD
) -> user_service_pb2.CreateUserRequest:
    return user_service_pb2.CreateUserRequest(user=user or a_user(), password=password)


def test_a_full_user_at_every_bound_is_valid() -> None:
    validation.check_new_user(
        a_request(
            user_pb2.User(
                id=2**63 - 1,
                username="a" * 64,
                first_name="f" * 256,
                last_name="l" * 256,
                email="e" * 126 + "@" + "d" * 127,
                phone="p" * 256,
                user_status=-(2**31),
            ),
            password="p" * 128,
        )
    )


@pytest.mark.parametrize("username", ["ann", "Ann.Lee_2-x", "ann@example.com", "0", "-._@"])
def test_usernames_of_the_safe_set_are_valid(username: str) -> None:
    assert validation.check_username(username) == username


@pytest.mark.parametrize("email", ["a@b", "ann.lee+tag@example.co.uk", "名前@例え.jp"])
def test_emails_with_one_at_between_text_are_valid(email: str) -> None:
    validation.check_email(email)


@pytest.mark.parametrize(
    ("user", "message"),
    [
        (a_user(username=""), "username is required"),
        (a_user(username="a" * 65), "username must be at most 64 characters"),
        (a_user(username="ann lee"), "username may contain only letters, digits and . _ - @"),
        (a_user(username="ann/../x"), "username may contain only letters, digits and . _ - @"),
        (a_user(username="ännchen"), "username may contain only letters, digits and . _ - @"),
        (a_user(username="ann\n"), "username may contain only letters, digits and . _ - @"),
        (a_user(email=""), "email is required"),
        (a_user(email="nope"), "email must look like an email"),
        (a_user(email="@"), "email must look like an email"),
        (a_user(email="ann@"), "email must look like an email"),
        (a_user(email="@example.com"), "email must look like an email"),
        (a_user(email="a@b@c"), "email must look like an email"),
        (a_user(email="ann @example.com"), "email must look like an email"),
        (a_user(email="e" * 127 + "@" + "d" * 127), "email must be at most 254 characters"),
        (a_user(email="ann@exa\x00mple.com"), "email must not contain control characters"),
        (a_user(first_name="f" * 257), "firstName must be at most 256 characters"),
        (a_user(last_name="Lee\x1b[31m"), "lastName must not contain control characters"),
        (a_user(phone="555\r\n"), "phone must not contain control characters"),
        (a_user(id=0), "id must be positive"),
        (a_user(id=-3), "id must be positive"),
    ],
)
def test_an_invalid_new_user_names_the_field(user: user_pb2.User, message: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"^{re.escape(message)}$"):
        validation.check_new_user(a_request(user))


def test_a_new_user_needs_a_password() -> None:
    with pytest.raises(InvalidArgument, match=r"^password is required$"):
        validation.check_new_user(a_request(password=""))


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ([], "at least one user is required"),
        (
            [a_request()] * (MAX_USERS_PER_BATCH + 1),
            f"at most {MAX_USERS_PER_BATCH} users fit in one request",
        ),
        (
            [a_request(), a_request(a_user(username="bob", email="x"))],
            "users[1]: email must look like an email",
        ),
        ([a_request(), a_request(a_user(username="bob"), password="")], "users[1]: password is required"),
        ([a_request(), a_request()], "users[1]: duplicate username"),
        ([a_request(a_user(id=5)), a_request(a_user(username="bob", id=5))], "users[1]: duplicate id"),
        # The first problem in order is named, whichever kind it is.
        (
            [a_request(), a_request(), a_request(a_user(username="bob", email="x"))],
            "users[1]: duplicate username",
        ),
        (
            [a_request(), a_request(a_user(username="bob", email="x")), a_request()],
            "users[1]: email must look like an email",
        ),
    ],
)
def test_an_invalid_batch_names_the_first_user_rejected(
    requests: list[user_service_pb2.CreateUserRequest], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=rf"^{re.escape(message)}$"):
        validation.check_new_users(requests)


def test_a_batch_of_as_many_distinct_users_as_the_bound_is_valid() -> None:
    batch = [a_request(a_user(username=f"user{n}", id=n + 1)) for n in range(MAX_USERS_PER_BATCH)]
    validation.check_new_users(batch)


def test_an_update_may_leave_the_email_empty_and_ignores_the_id() -> None:
    request = user_service_pb2.UpdateUserRequest(username="ann", user=a_user(email="", id=-1))

    assert validation.check_update(request) == "ann"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (user_service_pb2.UpdateUserRequest(username="", user=a_user()), "username is required"),
        (
            user_service_pb2.UpdateUserRequest(username="ann", user=a_user(username="a b")),
            "username may contain only letters, digits and . _ - @",
        ),
        (
            user_service_pb2.UpdateUserRequest(username="ann", user=a_user(email="nope")),
            "email must look like an email",
        ),
        (
            user_service_pb2.UpdateUserRequest(username="ann", user=a_user(), password=""),
            "password is required",
        ),
    ],
)
def test_an_invalid_update_names_the_field(
    request_: user_service_pb2.UpdateUserRequest, message: str
) -> None:
    with pytest.raises(InvalidArgument, match=rf"^{re.escape(message)}$"):
        validation.check_update(request_)
