"""Values and bounds the service enforces, with the messages clients see."""

from __future__ import annotations

import pytest

from petstore.user.v1 import user_pb2, user_service_pb2
from petstore_common.errors import InvalidArgument
from petstore_common.rules import field_rules
from petstore_user import validation

PASSWORD = "a secret of some length"
USERNAME = "username: may contain only letters, digits and . _ - @"
EMAIL = "email: must look like an email"
COMMON = "password is one of the most common passwords: choose another"
MAX_USERS_PER_BATCH = field_rules(user_service_pb2.CreateUsersRequest, "users").repeated.max_items


def a_user(**fields: object) -> user_pb2.User:
    user = user_pb2.User(username="ann", email="ann@example.com")
    for name, value in fields.items():
        setattr(user, name, value)
    return user


def a_request(
    user: user_pb2.User | None = None, password: str = PASSWORD
) -> user_service_pb2.CreateUserRequest:
    return user_service_pb2.CreateUserRequest(user=user or a_user(), password=password)


def refusal_of_new(request: user_service_pb2.CreateUserRequest) -> str | None:
    """What CreateUser says of `request`: the interceptor's check, then the servicer's."""
    try:
        validation.REQUEST_RULES.check(request)
        validation.check_new_user(request)
    except InvalidArgument as exc:
        return exc.message
    return None


def refusal(request: object) -> str | None:
    return validation.REQUEST_RULES.refusal(request)


def test_a_full_user_at_every_bound_is_valid() -> None:
    request = a_request(
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
    assert refusal_of_new(request) is None


@pytest.mark.parametrize("username", ["ann", "Ann.Lee_2-x", "ann@example.com", "0", "-._@"])
def test_usernames_of_the_safe_set_are_valid(username: str) -> None:
    assert refusal(user_service_pb2.GetUserRequest(username=username)) is None


@pytest.mark.parametrize("email", ["a@b", "ann.lee+tag@example.co.uk", "名前@例え.jp"])
def test_emails_with_one_at_between_text_are_valid(email: str) -> None:
    assert refusal_of_new(a_request(a_user(email=email))) is None


@pytest.mark.parametrize(
    ("user", "message"),
    [
        (a_user(username=""), "username is required"),
        (a_user(username="a" * 65), "username: must be at most 64 characters"),
        (a_user(username="ann lee"), USERNAME),
        (a_user(username="ann/../x"), USERNAME),
        (a_user(username="ännchen"), USERNAME),
        (a_user(username="ann\n"), USERNAME),
        (a_user(email=""), "email is required"),
        (a_user(email="nope"), EMAIL),
        (a_user(email="@"), "email: must be at least 3 characters"),
        (a_user(email="ann@"), EMAIL),
        (a_user(email="@example.com"), EMAIL),
        (a_user(email="a@b@c"), EMAIL),
        (a_user(email="ann @example.com"), EMAIL),
        (a_user(email="ann\u00a0@example.com"), EMAIL),  # any Unicode space, as str.isspace says
        (a_user(email="ann@example.com\u3000"), EMAIL),
        (a_user(email="e" * 127 + "@" + "d" * 127), "email: must be at most 254 characters"),
        (a_user(email="ann@exa\x00mple.com"), EMAIL),
        (a_user(first_name="f" * 257), "firstName: must be at most 256 characters"),
        (a_user(last_name="Lee\x1b[31m"), "lastName: must not contain control characters"),
        (a_user(phone="555\r\n"), "phone: must not contain control characters"),
        (a_user(id=0), "id: must be positive"),
        (a_user(id=-3), "id: must be positive"),
    ],
)
def test_an_invalid_new_user_names_the_field(user: user_pb2.User, message: str) -> None:
    assert refusal_of_new(a_request(user)) == message


@pytest.mark.parametrize(
    ("password", "message"),
    [
        ("", "password is required"),
        ("p" * 7, "password: must be at least 8 characters"),
        ("ünïcødé", "password: must be at least 8 characters"),  # characters, not bytes
        ("p" * 129, "password: must be at most 128 characters"),
        ("password1", "password is one of the most common passwords: choose another"),
        ("ANN-is-me", None),
    ],
)
def test_a_new_user_needs_a_good_password(password: str, message: str | None) -> None:
    assert refusal_of_new(a_request(password=password)) == message


@pytest.mark.parametrize("field", ["username", "first_name", "last_name", "email", "phone"])
def test_no_message_repeats_what_was_sent(field: str) -> None:
    """Messages name the field and the rule, never the value (a password least of all)."""
    secret = "s3cret\x00" + "x" * 300
    message = refusal_of_new(a_request(a_user(**{field: secret})))
    assert message is not None
    assert "s3cret" not in message
    assert "s3cret" not in (refusal_of_new(a_request(password="s3cret" * 30)) or "")


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (user_service_pb2.GetUserRequest(username=""), "username is required"),
        (user_service_pb2.GetUserRequest(username="../zed"), USERNAME),
        (user_service_pb2.DeleteUserRequest(username="a" * 65), "username: must be at most 64 characters"),
        (user_service_pb2.LoginRequest(username="ann"), "password is required"),
        (user_service_pb2.LoginRequest(username="ann lee", password="p"), USERNAME),
        (user_service_pb2.CreateUsersRequest(), "users: must not be empty"),
        (
            user_service_pb2.CreateUsersRequest(users=[a_request()] * (MAX_USERS_PER_BATCH + 1)),
            f"users: must have at most {MAX_USERS_PER_BATCH} entries",
        ),
    ],
)
def test_invalid_requests_name_the_field(request_: object, message: str) -> None:
    assert refusal(request_) == message


def test_a_login_takes_any_password_the_account_may_have() -> None:
    """Accounts from before the password policy keep their shorter passwords; a longer one than
    any new password is simply wrong (the servicer counts it), not refused unheard."""
    for password in ("p", "p" * 1000):
        assert refusal(user_service_pb2.LoginRequest(username="ann", password=password)) is None


def refusal_of_batch(requests: list[user_service_pb2.CreateUserRequest]) -> str | None:
    """What CreateUsers says of a batch: the field rules of every user first (the interceptor),
    then the rest of each user's checks, in order, and repeats (the servicer)."""
    try:
        validation.REQUEST_RULES.check(user_service_pb2.CreateUsersRequest(users=requests))
        validation.check_new_users(requests)
    except InvalidArgument as exc:
        return exc.message
    return None


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ([], "users: must not be empty"),
        (
            [a_request()] * (MAX_USERS_PER_BATCH + 1),
            f"users: must have at most {MAX_USERS_PER_BATCH} entries",
        ),
        (
            [a_request(), a_request(a_user(username="bob", email="not-an-email"))],
            "users[1].email: must look like an email",
        ),
        ([a_request(), a_request(a_user(username="bob"), password="")], "users[1].password is required"),
        ([a_request(), a_request(a_user(username="bob"), password="password1")], f"users[1]: {COMMON}"),
        ([a_request(), a_request()], "users[1]: duplicate username"),
        ([a_request(a_user(id=5)), a_request(a_user(username="bob", id=5))], "users[1]: duplicate id"),
        # The first user breaking a field rule is named; else the first problem in order,
        # whichever kind it is.
        (
            [a_request(), a_request(), a_request(a_user(username="bob", email="not-an-email"))],
            "users[2].email: must look like an email",
        ),
        (
            [a_request(), a_request(a_user(username="bob", email="not-an-email")), a_request()],
            "users[1].email: must look like an email",
        ),
        (
            [a_request(), a_request(), a_request(a_user(username="bob"), password="password1")],
            "users[1]: duplicate username",
        ),
        (
            [a_request(), a_request(a_user(username="bob"), password="password1"), a_request()],
            f"users[1]: {COMMON}",
        ),
    ],
)
def test_an_invalid_batch_names_the_first_user_rejected(
    requests: list[user_service_pb2.CreateUserRequest], message: str
) -> None:
    assert refusal_of_batch(requests) == message


def test_a_batch_of_as_many_distinct_users_as_the_bound_is_valid() -> None:
    batch = [a_request(a_user(username=f"user{n}", id=n + 1)) for n in range(MAX_USERS_PER_BATCH)]
    assert refusal_of_batch(batch) is None


def refusal_of_update(request: user_service_pb2.UpdateUserRequest) -> str | None:
    try:
        validation.REQUEST_RULES.check(request)
        validation.check_update(request)
    except InvalidArgument as exc:
        return exc.message
    return None


def test_an_update_may_leave_the_email_empty_and_ignores_the_id() -> None:
    request = user_service_pb2.UpdateUserRequest(username="ann", user=a_user(email="", id=-1))

    assert refusal_of_update(request) is None


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (user_service_pb2.UpdateUserRequest(username="", user=a_user()), "username is required"),
        (user_service_pb2.UpdateUserRequest(username="ann", user=a_user(username="a b")), USERNAME),
        (user_service_pb2.UpdateUserRequest(username="ann", user=a_user(email="nope")), EMAIL),
        (
            user_service_pb2.UpdateUserRequest(username="ann", user=a_user(), password=""),
            "password: must be at least 8 characters",
        ),
        (
            user_service_pb2.UpdateUserRequest(username="ann", user=a_user(), password="ann"),
            "password: must be at least 8 characters",
        ),
        (
            user_service_pb2.UpdateUserRequest(
                username="ann", user=a_user(username="annabelle"), password="AnnaBelle"
            ),
            "password must not be the username",
        ),
    ],
)
def test_an_invalid_update_names_the_field(
    request_: user_service_pb2.UpdateUserRequest, message: str
) -> None:
    assert refusal_of_update(request_) == message


def test_every_field_naming_a_user_has_the_usernames_rules() -> None:
    """A lookup by a name no user can have is refused as the name itself would be."""
    username = field_rules(user_pb2.User, "username")
    for message in (
        user_service_pb2.GetUserRequest,
        user_service_pb2.UpdateUserRequest,
        user_service_pb2.DeleteUserRequest,
        user_service_pb2.LoginRequest,
    ):
        assert field_rules(message, "username") == username, message
