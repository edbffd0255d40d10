"""UserService over a real in-process gRPC server (memory store), called through the stub."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import grpc
import jwt
import pytest
from argon2 import Parameters, PasswordHasher, Type, extract_parameters
from google.protobuf.message import Message

from petstore.user.v1 import user_pb2, user_service_pb2, user_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.errors import RETRY_AFTER_METADATA, NotFound
from petstore_common.grpc_client import is_serving
from petstore_common.grpc_server import RunningService, start_service
from petstore_common.session_tokens import SessionKeys
from petstore_common.settings import ServiceSettings
from petstore_common.versions import Precondition
from petstore_user import login_throttle, password_changes
from petstore_user.passwords import PARAMETERS, LaneBound, Passwords
from petstore_user.service import SERVICE_NAME, build_definition
from petstore_user.sessions import SessionTokens
from petstore_user.storage.base import Account, LoginSource, Session
from petstore_user.storage.memory import MemoryUserStore

if TYPE_CHECKING:
    from petstore.user.v1.user_service_pb2_grpc import UserServiceAsyncStub

SECRET = "test-session-secret-" + "s" * 32
PASSWORD = "correct horse battery staple"
TTL_SECONDS = 600
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
ALREADY_EXISTS = grpc.StatusCode.ALREADY_EXISTS
PERMISSION_DENIED = grpc.StatusCode.PERMISSION_DENIED
STAFF = callers.staff()


class Clock:
    """The service's session clock, moved by the tests (starts at the real time)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> MemoryUserStore:
    return MemoryUserStore()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tokens(clock: Clock) -> SessionTokens:
    return SessionTokens(SECRET, TTL_SECONDS, clock=clock)


@pytest.fixture
def passwords() -> Iterator[Passwords]:
    passwords = Passwords()  # the real parameters: a few dozen hashes cost about a second
    try:
        yield passwords
    finally:
        passwords.close()


@pytest.fixture
async def running(
    store: MemoryUserStore, passwords: Passwords, tokens: SessionTokens
) -> AsyncIterator[RunningService]:
    settings = ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    service = await start_service(build_definition(store, passwords, tokens), settings)
    try:
        yield service
    finally:
        await service.stop(None)


@pytest.fixture
async def channel(running: RunningService) -> AsyncIterator[grpc.aio.Channel]:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        yield channel


@pytest.fixture
def stub(channel: grpc.aio.Channel) -> UserServiceAsyncStub:
    return user_service_pb2_grpc.UserServiceStub(channel)


def a_user(username: str = "ann", **fields: Any) -> user_pb2.User:
    user = user_pb2.User(
        username=username,
        first_name="Ann",
        last_name="Lee",
        email=f"{username}@example.com",
        phone="555",
        user_status=1,
    )
    for name, value in fields.items():
        setattr(user, name, value)
    return user


def a_create(user: user_pb2.User, password: str = PASSWORD) -> user_service_pb2.CreateUserRequest:
    return user_service_pb2.CreateUserRequest(caller=STAFF, user=user, password=password)


async def create(stub: UserServiceAsyncStub, user: user_pb2.User, password: str = PASSWORD) -> user_pb2.User:
    return (await stub.CreateUser(a_create(user, password), timeout=5)).user


async def get(stub: UserServiceAsyncStub, username: str) -> user_pb2.User:
    return (
        await stub.GetUser(user_service_pb2.GetUserRequest(caller=STAFF, username=username), timeout=5)
    ).user


async def login(
    stub: UserServiceAsyncStub, username: str = "ann", password: str = PASSWORD
) -> user_service_pb2.LoginResponse:
    return await stub.Login(user_service_pb2.LoginRequest(username=username, password=password), timeout=5)


async def is_active(stub: UserServiceAsyncStub, session_id: str) -> bool:
    reply = await stub.CheckSession(user_service_pb2.CheckSessionRequest(session_id=session_id), timeout=5)
    return reply.active


def session_id(token: str) -> str:
    return str(jwt.decode(token, options={"verify_signature": False})["jti"])


def caller(user_id: int | None = None) -> callers.Caller:
    """Staff without a user id, else that customer."""
    return callers.staff() if user_id is None else callers.customer(user_id)


@contextmanager
def fails(code: grpc.StatusCode, message: str) -> Iterator[None]:
    """Expect the call inside to fail with this status code and exact message."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        yield
    assert (caught.value.code(), caught.value.details()) == (code, message)


async def test_health_reports_the_service_serving(channel: grpc.aio.Channel) -> None:
    for _ in range(50):
        if await is_serving(channel, SERVICE_NAME):
            break
        await asyncio.sleep(0.05)
    assert await is_serving(channel, SERVICE_NAME)


async def test_a_created_user_is_returned_by_get(stub: UserServiceAsyncStub, store: MemoryUserStore) -> None:
    created = await create(stub, a_user())

    assert created.id > 0
    assert created == a_user(id=created.id, version=1)
    assert await get(stub, "ann") == created
    account = await store.get_account("ann")
    assert account.password_hash.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert extract_parameters(account.password_hash) == PARAMETERS


async def test_a_client_chosen_id_is_kept(stub: UserServiceAsyncStub) -> None:
    assert (await create(stub, a_user(id=77))).id == 77
    with fails(ALREADY_EXISTS, "user id 77 is taken"):
        await create(stub, a_user("bob", id=77))


async def test_a_taken_username_is_already_exists(stub: UserServiceAsyncStub) -> None:
    await create(stub, a_user())

    with fails(ALREADY_EXISTS, "username ann is taken"):
        await create(stub, a_user(email="other@example.com"))


async def test_twelve_racing_sign_ups_one_wins(stub: UserServiceAsyncStub) -> None:
    outcomes = await asyncio.gather(
        *(stub.CreateUser(a_create(a_user("racer")), timeout=10) for _ in range(12)), return_exceptions=True
    )

    created = [outcome for outcome in outcomes if isinstance(outcome, user_service_pb2.CreateUserResponse)]
    errors = [outcome for outcome in outcomes if isinstance(outcome, grpc.aio.AioRpcError)]
    assert (len(created), len(errors)) == (1, 11)
    assert await get(stub, "racer") == created[0].user
    assert {(error.code(), error.details()) for error in errors} == {
        (ALREADY_EXISTS, "username racer is taken")
    }


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (a_create(a_user(email="nope")), "email: must look like an email"),
        (a_create(a_user(username="")), "username is required"),
        (a_create(a_user(id=-1)), "id: must be positive"),
        (a_create(a_user(), password=""), "password is required"),
        (a_create(a_user(), password="p" * 129), "password: must be at most 128 characters"),
    ],
)
async def test_an_invalid_user_is_invalid_argument(
    stub: UserServiceAsyncStub,
    store: MemoryUserStore,
    request_: user_service_pb2.CreateUserRequest,
    message: str,
) -> None:
    with fails(INVALID, message):
        await stub.CreateUser(request_, timeout=5)
    with pytest.raises(NotFound):
        await store.get("ann")


async def test_create_users_stores_all_in_order(stub: UserServiceAsyncStub) -> None:
    request = user_service_pb2.CreateUsersRequest(
        caller=STAFF, users=[a_create(a_user(name)) for name in ("ann", "bob")]
    )

    reply = await stub.CreateUsers(request, timeout=5)

    assert [user.username for user in reply.users] == ["ann", "bob"]
    assert [await get(stub, name) for name in ("ann", "bob")] == list(reply.users)


@pytest.mark.parametrize(
    ("users", "code", "message"),
    [
        ([a_user("bob"), a_user("bob")], INVALID, "users[1]: duplicate username"),
        ([a_user("bob"), a_user("cat", email="x")], INVALID, "users[1].email: must be at least 3 characters"),
        (
            [a_user("bob"), a_user("cat"), a_user("taken")],
            ALREADY_EXISTS,
            "users[2]: username taken is taken",
        ),
        ([], INVALID, "users: must not be empty"),
    ],
)
async def test_create_users_is_all_or_none(
    stub: UserServiceAsyncStub, users: list[user_pb2.User], code: grpc.StatusCode, message: str
) -> None:
    await create(stub, a_user("taken"))
    request = user_service_pb2.CreateUsersRequest(caller=STAFF, users=[a_create(user) for user in users])

    with fails(code, message):
        await stub.CreateUsers(request, timeout=5)
    for name in ("bob", "cat"):
        with fails(NOT_FOUND, f"user {name} not found"):
            await get(stub, name)


async def test_get_of_an_unknown_or_invalid_username(stub: UserServiceAsyncStub) -> None:
    with fails(NOT_FOUND, "user zed not found"):
        await get(stub, "zed")
    with fails(INVALID, "username: may contain only letters, digits and . _ - @"):
        await get(stub, "../zed")


async def test_users_update_themselves_and_a_new_password_replaces_the_old(
    stub: UserServiceAsyncStub,
) -> None:
    ann = await create(stub, a_user())
    changes = a_user(first_name="Annie", email="annie@example.com", id=999)
    request = user_service_pb2.UpdateUserRequest(
        username="ann", user=changes, password="new-password", caller=caller(ann.id)
    )

    reply = await stub.UpdateUser(request, timeout=5)

    assert reply.user == a_user(first_name="Annie", email="annie@example.com", id=ann.id, version=2)
    assert await get(stub, "ann") == reply.user
    assert (await login(stub, password="new-password")).session_token
    with fails(INVALID, "invalid username/password supplied"):
        await login(stub)


async def test_an_update_without_password_keeps_it_and_may_rename(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user())
    request = user_service_pb2.UpdateUserRequest(username="ann", user=a_user("anne"), caller=caller())

    reply = await stub.UpdateUser(request, timeout=5)

    assert (reply.user.id, reply.user.username) == (ann.id, "anne")
    with fails(NOT_FOUND, "user ann not found"):
        await get(stub, "ann")
    assert (await login(stub, "anne")).session_token


async def test_only_the_user_or_a_static_key_may_update(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user())
    bob = await create(stub, a_user("bob"))
    hacked = a_user(first_name="Hacked")

    with fails(PERMISSION_DENIED, "only staff or the user itself may change this user"):
        await stub.UpdateUser(
            user_service_pb2.UpdateUserRequest(username="ann", user=hacked, caller=caller(bob.id)), timeout=5
        )
    assert await get(stub, "ann") == ann

    reply = await stub.UpdateUser(
        user_service_pb2.UpdateUserRequest(username="ann", user=hacked, caller=caller()), timeout=5
    )
    assert reply.user.first_name == "Hacked"


@pytest.mark.parametrize(
    ("request_", "code", "message"),
    [
        (
            user_service_pb2.UpdateUserRequest(caller=STAFF, username="ann", user=a_user("bob")),
            ALREADY_EXISTS,
            "username bob is taken",
        ),
        (
            user_service_pb2.UpdateUserRequest(caller=STAFF, username="zed", user=a_user("zed")),
            NOT_FOUND,
            "user zed not found",
        ),
        (
            user_service_pb2.UpdateUserRequest(caller=STAFF, username="ann", user=a_user(email="x")),
            INVALID,
            "email: must be at least 3 characters",
        ),
        (
            user_service_pb2.UpdateUserRequest(caller=STAFF, username="ann", user=a_user(), password=""),
            INVALID,
            "password: must be at least 8 characters",
        ),
    ],
)
async def test_failing_updates(
    stub: UserServiceAsyncStub,
    request_: user_service_pb2.UpdateUserRequest,
    code: grpc.StatusCode,
    message: str,
) -> None:
    ann = await create(stub, a_user())
    await create(stub, a_user("bob"))

    with fails(code, message):
        await stub.UpdateUser(request_, timeout=5)
    assert await get(stub, "ann") == ann


async def test_delete_by_the_user_or_a_static_key(stub: UserServiceAsyncStub) -> None:
    await create(stub, a_user())
    bob = await create(stub, a_user("bob"))

    with fails(PERMISSION_DENIED, "only staff or the user itself may change this user"):
        await stub.DeleteUser(
            user_service_pb2.DeleteUserRequest(username="ann", caller=caller(bob.id)), timeout=5
        )
    await stub.DeleteUser(
        user_service_pb2.DeleteUserRequest(username="bob", caller=caller(bob.id)), timeout=5
    )
    await stub.DeleteUser(user_service_pb2.DeleteUserRequest(username="ann", caller=caller()), timeout=5)

    for name in ("ann", "bob"):
        with fails(NOT_FOUND, f"user {name} not found"):
            await stub.DeleteUser(user_service_pb2.DeleteUserRequest(caller=STAFF, username=name), timeout=5)


async def test_deleting_a_user_ends_its_sessions(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user())
    token = (await login(stub)).session_token

    await stub.DeleteUser(
        user_service_pb2.DeleteUserRequest(username="ann", caller=caller(ann.id)), timeout=5
    )

    assert not await is_active(stub, session_id(token))


async def test_login_issues_a_session_token_the_gateway_accepts(
    stub: UserServiceAsyncStub, clock: Clock
) -> None:
    ann = await create(stub, a_user())

    reply = await login(stub)

    claims = jwt.decode(
        reply.session_token, SECRET, algorithms=["HS256"], options={"require": ["exp", "iat", "sub", "jti"]}
    )
    assert (claims["sub"], claims["name"]) == (str(ann.id), "ann")
    assert claims["iat"] == int(clock.now)
    assert claims["exp"] == claims["iat"] + TTL_SECONDS == reply.expire_time.seconds
    assert await is_active(stub, claims["jti"])


@pytest.mark.parametrize(
    ("username", "password", "code", "message"),
    [
        ("ann", "wrong", INVALID, "invalid username/password supplied"),
        ("ann", "", INVALID, "password is required"),
        ("ann", PASSWORD + "x" * 200, INVALID, "invalid username/password supplied"),
        ("zed", PASSWORD, NOT_FOUND, "user zed not found"),
        ("", PASSWORD, INVALID, "username is required"),
    ],
)
async def test_failing_logins(
    stub: UserServiceAsyncStub, username: str, password: str, code: grpc.StatusCode, message: str
) -> None:
    await create(stub, a_user())

    with fails(code, message):
        await login(stub, username, password)


async def test_a_login_upgrades_a_weaker_hash(stub: UserServiceAsyncStub, store: MemoryUserStore) -> None:
    weak = Parameters(
        type=Type.ID, version=19, salt_len=16, hash_len=32, time_cost=1, memory_cost=8, parallelism=1
    )
    await store.create(Account(a_user(), PasswordHasher.from_parameters(weak).hash(PASSWORD)))

    await login(stub)

    upgraded = (await store.get_account("ann")).password_hash
    assert extract_parameters(upgraded) == PARAMETERS
    assert PasswordHasher().verify(upgraded, PASSWORD)


async def test_logout_ends_the_session_and_is_idempotent(stub: UserServiceAsyncStub) -> None:
    await create(stub, a_user())
    first, second = (await login(stub)).session_token, (await login(stub)).session_token

    for _ in range(2):
        await stub.Logout(user_service_pb2.LogoutRequest(session_token=first), timeout=5)

    assert not await is_active(stub, session_id(first))
    assert await is_active(stub, session_id(second))


async def test_logout_of_a_token_that_is_not_ours_changes_nothing(stub: UserServiceAsyncStub) -> None:
    await create(stub, a_user())
    token = (await login(stub)).session_token
    claims = jwt.decode(token, options={"verify_signature": False})
    forged = jwt.encode(claims, "not-the-secret-but-just-as-long-000000000", algorithm="HS256")

    for candidate in ("", "garbage", "a.b.c", forged):
        await stub.Logout(user_service_pb2.LogoutRequest(session_token=candidate), timeout=5)

    assert await is_active(stub, session_id(token))


NEXT_SECRET = "next-session-secret-" + "n" * 32


@asynccontextmanager
async def replica(
    store: MemoryUserStore, passwords: Passwords, keys: SessionKeys, clock: Clock
) -> AsyncIterator[UserServiceAsyncStub]:
    """Another user service over the same store, configured with `keys`: a replica after a
    rollout of new session secrets."""
    settings = ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    tokens = SessionTokens(keys, TTL_SECONDS, clock=clock)
    service = await start_service(build_definition(store, passwords, tokens), settings)
    try:
        async with signed_channel(f"127.0.0.1:{service.port}") as channel:
            yield user_service_pb2_grpc.UserServiceStub(channel)
    finally:
        await service.stop(None)


async def test_a_session_signed_before_a_rotation_can_still_be_logged_out(
    stub: UserServiceAsyncStub, store: MemoryUserStore, passwords: Passwords, clock: Clock
) -> None:
    """Logout reads the token: a replica that signs with the next secret must still read one
    signed with the previous, else the logout would do nothing and the session stay open."""
    await create(stub, a_user())
    before = (await login(stub)).session_token
    async with replica(store, passwords, SessionKeys(NEXT_SECRET, (SECRET,)), clock) as rotated:
        after = (await login(rotated)).session_token
        assert jwt.get_unverified_header(after)["kid"] != jwt.get_unverified_header(before)["kid"]
        await rotated.Logout(user_service_pb2.LogoutRequest(session_token=before), timeout=5)
        assert not await is_active(rotated, session_id(before))
        assert await is_active(rotated, session_id(after))


async def test_once_the_previous_secret_is_dropped_its_tokens_end_nothing(
    stub: UserServiceAsyncStub, store: MemoryUserStore, passwords: Passwords, clock: Clock
) -> None:
    await create(stub, a_user())
    old = (await login(stub)).session_token
    async with replica(store, passwords, SessionKeys(NEXT_SECRET), clock) as dropped:
        await dropped.Logout(user_service_pb2.LogoutRequest(session_token=old), timeout=5)
    assert await is_active(stub, session_id(old))  # not read, so not ended (the gateway refuses it)


async def test_a_session_expires_after_its_ttl(stub: UserServiceAsyncStub, clock: Clock) -> None:
    await create(stub, a_user())
    token = (await login(stub)).session_token

    clock.now += TTL_SECONDS - 1
    assert await is_active(stub, session_id(token))
    clock.now += 1
    assert not await is_active(stub, session_id(token))


@pytest.mark.parametrize("candidate", ["", "unknown", "x" * 65])
async def test_unknown_sessions_are_inactive(stub: UserServiceAsyncStub, candidate: str) -> None:
    assert not await is_active(stub, candidate)


async def test_a_login_deletes_expired_sessions(
    stub: UserServiceAsyncStub, store: MemoryUserStore, tokens: SessionTokens
) -> None:
    ann = await create(stub, a_user())
    password_hash = (await store.get_account("ann")).password_hash
    await store.add_session(Session("old", ann.id, tokens.now() - timedelta(seconds=1)), password_hash)

    await login(stub)

    assert await store.delete_expired_sessions(tokens.now()) == 0


async def test_no_response_ever_carries_the_password_or_its_hash(
    stub: UserServiceAsyncStub, store: MemoryUserStore
) -> None:
    replies: list[bytes] = []
    calls: list[Callable[[], Awaitable[Message]]] = [
        lambda: stub.CreateUser(a_create(a_user()), timeout=5),
        lambda: stub.CreateUser(a_create(a_user()), timeout=5),
        lambda: stub.CreateUsers(
            user_service_pb2.CreateUsersRequest(caller=STAFF, users=[a_create(a_user("bob"))]), timeout=5
        ),
        lambda: stub.GetUser(user_service_pb2.GetUserRequest(caller=STAFF, username="ann"), timeout=5),
        lambda: stub.Login(user_service_pb2.LoginRequest(username="ann", password=PASSWORD), timeout=5),
        lambda: stub.Login(user_service_pb2.LoginRequest(username="ann", password=PASSWORD + "!"), timeout=5),
        lambda: stub.UpdateUser(
            user_service_pb2.UpdateUserRequest(
                caller=STAFF, username="ann", user=a_user(), password=PASSWORD
            ),
            timeout=5,
        ),
        lambda: stub.UpdateUser(
            user_service_pb2.UpdateUserRequest(
                caller=STAFF, username="ann", user=a_user(email="x"), password=PASSWORD
            ),
            timeout=5,
        ),
    ]
    failures = 0
    for call in calls:
        try:
            replies.append((await call()).SerializeToString())
        except grpc.aio.AioRpcError as error:
            failures += 1
            replies.append(str(error.details()).encode())

    secrets = [PASSWORD.encode(), b"$argon2", (await store.get_account("ann")).password_hash.encode()]
    assert (len(replies), failures) == (len(calls), 3)
    for reply in replies:
        for secret in secrets:
            assert secret not in reply


async def get_as(
    stub: UserServiceAsyncStub, username: str, who: callers.Caller
) -> tuple[user_pb2.User, user_service_pb2.UserView.ValueType]:
    reply = await stub.GetUser(user_service_pb2.GetUserRequest(caller=who, username=username), timeout=5)
    return reply.user, reply.view


async def test_the_whole_record_goes_to_staff_and_the_user_itself(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user(user_status=3))

    assert await get_as(stub, "ann", callers.staff()) == (ann, user_service_pb2.USER_VIEW_FULL)
    assert await get_as(stub, "ann", callers.customer(ann.id)) == (ann, user_service_pb2.USER_VIEW_FULL)
    assert (ann.email, ann.phone, ann.user_status) == ("ann@example.com", "555", 3)


@pytest.mark.parametrize(
    "who",
    [
        pytest.param(callers.customer(987_654), id="another-customer"),
        pytest.param(callers.anonymous(), id="anonymous"),
        pytest.param(callers.Caller(), id="no-caller"),
    ],
)
async def test_everybody_else_gets_the_public_view(stub: UserServiceAsyncStub, who: callers.Caller) -> None:
    ann = await create(stub, a_user(user_status=3))

    public = user_pb2.User(id=ann.id, username="ann")
    assert await get_as(stub, "ann", who) == (public, user_service_pb2.USER_VIEW_PUBLIC)


@pytest.mark.parametrize(
    "who",
    [pytest.param(callers.anonymous(), id="anonymous"), pytest.param(callers.customer(5), id="customer")],
)
async def test_a_sign_up_cannot_choose_its_staff_managed_status(
    stub: UserServiceAsyncStub, who: callers.Caller
) -> None:
    request = user_service_pb2.CreateUserRequest(caller=who, user=a_user(user_status=9), password=PASSWORD)

    created = (await stub.CreateUser(request, timeout=5)).user

    assert created.user_status == 0
    assert (await get(stub, "ann")).user_status == 0
    assert (await create(stub, a_user("bob", user_status=9))).user_status == 9  # staff may


@pytest.mark.parametrize(
    "who",
    [pytest.param(callers.anonymous(), id="anonymous"), pytest.param(callers.customer(5), id="customer")],
)
async def test_only_staff_create_users_in_bulk(stub: UserServiceAsyncStub, who: callers.Caller) -> None:
    request = user_service_pb2.CreateUsersRequest(caller=who, users=[a_create(a_user("bulk"))])

    with fails(PERMISSION_DENIED, "only staff may create users in bulk"):
        await stub.CreateUsers(request, timeout=5)
    with fails(NOT_FOUND, "user bulk not found"):
        await get(stub, "bulk")


async def test_a_customer_keeps_its_status_and_id_whatever_it_sends(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user(user_status=2))
    changes = a_user(first_name="Annie", user_status=7, id=ann.id + 50)
    request = user_service_pb2.UpdateUserRequest(caller=caller(ann.id), username="ann", user=changes)

    reply = await stub.UpdateUser(request, timeout=5)

    assert (reply.user.id, reply.user.user_status, reply.user.first_name) == (ann.id, 2, "Annie")
    assert await get(stub, "ann") == reply.user


@pytest.mark.parametrize(
    "who",
    [
        pytest.param(callers.anonymous(), id="anonymous"),
        pytest.param(callers.Caller(), id="no-caller"),
        pytest.param(callers.customer(987_654), id="another-customer"),
    ],
)
async def test_nobody_but_staff_and_the_user_changes_or_deletes_it(
    stub: UserServiceAsyncStub, who: callers.Caller
) -> None:
    ann = await create(stub, a_user())
    denied = "only staff or the user itself may change this user"

    with fails(PERMISSION_DENIED, denied):
        await stub.UpdateUser(
            user_service_pb2.UpdateUserRequest(caller=who, username="ann", user=a_user(first_name="X")),
            timeout=5,
        )
    with fails(PERMISSION_DENIED, denied):
        await stub.DeleteUser(user_service_pb2.DeleteUserRequest(caller=who, username="ann"), timeout=5)
    # An absent user is refused the same way: a refusal tells nothing about who exists.
    with fails(PERMISSION_DENIED, denied):
        await stub.DeleteUser(user_service_pb2.DeleteUserRequest(caller=who, username="zed"), timeout=5)
    assert await get(stub, "ann") == ann


def keyed_sign_up(
    user: user_pb2.User, key: str = "k1", password: str = PASSWORD
) -> user_service_pb2.CreateUserRequest:
    return user_service_pb2.CreateUserRequest(
        user=user, password=password, caller=callers.anonymous(), idempotency_key=key
    )


async def test_a_retried_sign_up_replays_the_first_user(stub: UserServiceAsyncStub) -> None:
    first = await stub.CreateUser(keyed_sign_up(a_user()), timeout=5)
    again = await stub.CreateUser(keyed_sign_up(a_user()), timeout=5)

    assert (again.user, again.idempotent_replay, first.idempotent_replay) == (first.user, True, False)


async def test_a_sign_up_key_reused_with_another_password_is_refused(stub: UserServiceAsyncStub) -> None:
    await stub.CreateUser(keyed_sign_up(a_user()), timeout=5)

    with fails(
        grpc.StatusCode.FAILED_PRECONDITION, "this Idempotency-Key was already used with a different request"
    ):
        await stub.CreateUser(keyed_sign_up(a_user(), password="another secret"), timeout=5)


async def test_twelve_racing_bulk_twins_create_the_users_once(stub: UserServiceAsyncStub) -> None:
    request = user_service_pb2.CreateUsersRequest(
        caller=STAFF, users=[a_create(a_user(name)) for name in ("ann", "bob")], idempotency_key="batch-1"
    )

    replies = await asyncio.gather(
        *(stub.CreateUsers(request, timeout=10) for _ in range(12)), return_exceptions=True
    )

    done = [r for r in replies if isinstance(r, user_service_pb2.CreateUsersResponse)]
    assert len({tuple(u.id for u in r.users) for r in done}) == 1
    assert all(r.code() == grpc.StatusCode.ABORTED for r in replies if isinstance(r, grpc.aio.AioRpcError))
    assert (await get(stub, "bob")).id == done[0].users[1].id


async def test_an_update_under_a_stale_version_changes_nothing(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user())
    update = user_service_pb2.UpdateUserRequest(
        caller=STAFF, username="ann", user=a_user(first_name="Annie"), precondition=Precondition(versions=[1])
    )
    first = (await stub.UpdateUser(update, timeout=5)).user

    with fails(
        grpc.StatusCode.FAILED_PRECONDITION, "user ann was changed since the version given (If-Match)"
    ):
        await stub.UpdateUser(update, timeout=5)  # version 1 is gone
    assert (first.version, await get(stub, "ann")) == (2, first)
    assert ann.version == 1


# --- from the side of callers who must be refused: ids, guesses, sessions after a change ---

EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
WRONG = "not the password at all"

SIGNING_UP = [
    pytest.param(callers.anonymous(), id="anonymous"),
    pytest.param(callers.customer(5), id="customer"),
]


@pytest.mark.parametrize("who", SIGNING_UP)
async def test_an_id_sent_at_sign_up_is_ignored(stub: UserServiceAsyncStub, who: callers.Caller) -> None:
    staffs = await create(stub, a_user("staffs", id=500))
    request = user_service_pb2.CreateUserRequest(caller=who, user=a_user("eve", id=500), password=PASSWORD)

    created = (await stub.CreateUser(request, timeout=5)).user  # no "user id 500 is taken" oracle

    assert created.id not in (500, 0)
    assert (await get(stub, "staffs")).id == staffs.id == 500


@pytest.mark.parametrize("who", SIGNING_UP)
async def test_a_deleted_users_id_never_comes_back(stub: UserServiceAsyncStub, who: callers.Caller) -> None:
    victim = await create(stub, a_user("victim"))
    await stub.DeleteUser(user_service_pb2.DeleteUserRequest(caller=STAFF, username="victim"), timeout=5)

    sign_up = user_service_pb2.CreateUserRequest(
        caller=who, user=a_user("victim", id=victim.id), password=PASSWORD
    )
    newcomer = (await stub.CreateUser(sign_up, timeout=5)).user
    with fails(grpc.StatusCode.ALREADY_EXISTS, f"user id {victim.id} is taken"):
        await create(stub, a_user("staffpick", id=victim.id))  # not even staff

    assert newcomer.id != victim.id
    assert (await get(stub, "victim")).id == newcomer.id


async def test_a_password_change_ends_every_other_session_of_the_account(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user())
    bob = await create(stub, a_user("bob"))
    changing, other = (await login(stub)).session_token, (await login(stub)).session_token
    bobs = (await login(stub, "bob")).session_token

    await stub.UpdateUser(
        user_service_pb2.UpdateUserRequest(
            username="ann",
            user=a_user(),
            password="a brand new secret",
            caller=caller(ann.id),
            session_id=session_id(changing),
        ),
        timeout=5,
    )

    assert not await is_active(stub, session_id(other))
    assert await is_active(stub, session_id(changing))  # the one that made it stays
    assert await is_active(stub, session_id(bobs))
    assert bob.id != ann.id
    assert (await login(stub, password="a brand new secret")).session_token


async def test_staff_changing_a_password_ends_every_session_of_the_account(
    stub: UserServiceAsyncStub,
) -> None:
    await create(stub, a_user())
    token = (await login(stub)).session_token

    await stub.UpdateUser(
        user_service_pb2.UpdateUserRequest(
            username="ann",
            user=a_user(),
            password="a brand new secret",
            caller=STAFF,
            session_id=session_id(token),
        ),
        timeout=5,
    )

    assert not await is_active(stub, session_id(token))


async def test_a_profile_edit_resending_the_password_changes_no_password_and_keeps_sessions(
    stub: UserServiceAsyncStub, store: MemoryUserStore
) -> None:
    """Classic clients send the whole User, password included, to change a phone number."""
    ann = await create(stub, a_user())
    editor, other = (await login(stub)).session_token, (await login(stub)).session_token
    stored_hash = (await store.get_account("ann")).password_hash

    edit = user_service_pb2.UpdateUserRequest(
        username="ann", user=a_user(phone="555-0199"), password=PASSWORD, caller=caller(ann.id)
    )
    updated = (await stub.UpdateUser(edit, timeout=5)).user

    assert updated.phone == "555-0199"
    assert (await store.get_account("ann")).password_hash == stored_hash  # not even re-salted
    assert await is_active(stub, session_id(editor))
    assert await is_active(stub, session_id(other))


async def test_an_update_without_a_password_keeps_the_sessions(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user())
    token = (await login(stub)).session_token

    await stub.UpdateUser(
        user_service_pb2.UpdateUserRequest(
            username="ann", user=a_user(first_name="Annie"), caller=caller(ann.id)
        ),
        timeout=5,
    )

    assert await is_active(stub, session_id(token))


async def test_a_new_password_must_meet_the_policy_an_old_one_still_logs_in(
    stub: UserServiceAsyncStub, store: MemoryUserStore, passwords: Passwords
) -> None:
    ann = await create(stub, a_user())
    # An account from before the policy, with a 3-character password.
    await store.update(ann.id, "ann", a_user(), await passwords.hash("abc"))
    assert (await login(stub, password="abc")).session_token

    for weak, message in (
        ("abc", "password: must be at least 8 characters"),
        ("password1", "password is one of the most common passwords: choose another"),
    ):
        with fails(INVALID, message):
            await stub.UpdateUser(
                user_service_pb2.UpdateUserRequest(
                    username="ann", user=a_user(), password=weak, caller=caller(ann.id)
                ),
                timeout=5,
            )
        with fails(INVALID, message):
            await stub.CreateUser(
                user_service_pb2.CreateUserRequest(
                    caller=callers.anonymous(), user=a_user("new"), password=weak
                ),
                timeout=5,
            )


async def wrong_guesses(stub: UserServiceAsyncStub, count: int) -> None:
    for _ in range(count):
        with fails(INVALID, "invalid username/password supplied"):
            await login(stub, password=WRONG)


async def test_after_the_free_failures_even_the_right_password_waits(
    stub: UserServiceAsyncStub, clock: Clock
) -> None:
    await create(stub, a_user())
    await wrong_guesses(stub, login_throttle.FREE_FAILURES)

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await login(stub)  # the right one: not even checked while the account waits
    assert caught.value.code() == EXHAUSTED
    assert caught.value.details() == "too many wrong passwords for this user; retry after 1 s"
    assert dict(caught.value.trailing_metadata() or ())[RETRY_AFTER_METADATA] == "1"

    clock.now += 1  # the wait ends by itself, and a good password clears the count
    assert (await login(stub)).session_token
    await wrong_guesses(stub, login_throttle.FREE_FAILURES)


async def test_the_wait_doubles_with_each_failure_up_to_its_cap(
    stub: UserServiceAsyncStub, clock: Clock
) -> None:
    await create(stub, a_user())
    await wrong_guesses(stub, login_throttle.FREE_FAILURES)
    waits = []
    for _ in range(12):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await login(stub, password=WRONG)
        wait = int(dict(caught.value.trailing_metadata() or ())[RETRY_AFTER_METADATA])
        waits.append(wait)
        clock.now += wait
        await wrong_guesses(stub, 1)

    assert waits == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]


async def test_failures_are_forgotten_after_a_quiet_day(stub: UserServiceAsyncStub, clock: Clock) -> None:
    await create(stub, a_user())
    await wrong_guesses(stub, login_throttle.FREE_FAILURES)

    clock.now += login_throttle.FORGET_AFTER_SECONDS
    await wrong_guesses(stub, login_throttle.FREE_FAILURES)  # counted from zero again: all free


async def test_a_burst_of_parallel_guesses_gets_no_more_than_the_free_ones(
    stub: UserServiceAsyncStub,
) -> None:
    await create(stub, a_user())

    async def guess() -> grpc.StatusCode:
        try:
            await login(stub, password=WRONG)
        except grpc.aio.AioRpcError as exc:
            return exc.code()
        return grpc.StatusCode.OK

    codes = await asyncio.gather(*(guess() for _ in range(3 * login_throttle.FREE_FAILURES)))

    assert codes.count(INVALID) == login_throttle.FREE_FAILURES  # heard; every other one waits
    assert codes.count(EXHAUSTED) == 2 * login_throttle.FREE_FAILURES


async def test_a_login_without_a_password_is_no_guess(stub: UserServiceAsyncStub) -> None:
    await create(stub, a_user())

    for _ in range(3 * login_throttle.FREE_FAILURES):
        with fails(INVALID, "password is required"):
            await login(stub, password="")

    assert (await login(stub)).session_token  # the owner is not locked out


async def test_failures_of_one_account_do_not_hold_back_another(stub: UserServiceAsyncStub) -> None:
    await create(stub, a_user())
    await create(stub, a_user("bob"))
    await wrong_guesses(stub, login_throttle.FREE_FAILURES)

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await login(stub)
    assert caught.value.code() == EXHAUSTED
    assert (await login(stub, "bob")).session_token


async def test_the_count_lives_in_the_store_not_in_the_servicer(
    stub: UserServiceAsyncStub, store: MemoryUserStore
) -> None:
    await create(stub, a_user())
    await wrong_guesses(stub, 3)

    assert (await store.get_account("ann")).failures.count == 3


def test_the_policy_figures() -> None:
    assert [login_throttle.wait_after(n) for n in range(1, 8)] == [0, 0, 0, 0, 1, 2, 4]
    assert login_throttle.wait_after(100) == login_throttle.MAX_WAIT_SECONDS


# --- hashing is spent only after every cheap check, within a budget, in its own lane ---


def a_change(ann: user_pb2.User, **fields: Any) -> user_service_pb2.UpdateUserRequest:
    """A new password for `ann`, by itself unless `fields` say otherwise."""
    request: dict[str, Any] = {"password": "a brand new secret", "caller": caller(ann.id), **fields}
    return user_service_pb2.UpdateUserRequest(username=ann.username, user=a_user(ann.username), **request)


async def test_a_stale_if_match_password_change_costs_no_hash(
    stub: UserServiceAsyncStub, passwords: Passwords
) -> None:
    ann = await create(stub, a_user())
    before = passwords.hashes

    for _ in range(10):
        with fails(
            grpc.StatusCode.FAILED_PRECONDITION, "user ann was changed since the version given (If-Match)"
        ):
            await stub.UpdateUser(a_change(ann, precondition=Precondition(versions=[7])), timeout=5)

    assert passwords.hashes == before
    assert (await login(stub)).session_token  # the old password still works


async def test_a_password_change_with_a_rename_onto_a_taken_name_costs_no_hash(
    stub: UserServiceAsyncStub, passwords: Passwords
) -> None:
    await create(stub, a_user("bob"))
    eve = await create(stub, a_user("eve"))
    before = passwords.hashes
    change = a_change(eve)
    change.user.username = "BOB"

    with fails(ALREADY_EXISTS, "username BOB is taken"):
        await stub.UpdateUser(change, timeout=5)

    assert passwords.hashes == before


async def test_password_changes_are_limited_per_account(
    stub: UserServiceAsyncStub, passwords: Passwords, clock: Clock
) -> None:
    ann = await create(stub, a_user())
    bob = await create(stub, a_user("bob"))
    for n in range(password_changes.PER_WINDOW):
        await stub.UpdateUser(a_change(ann, password=f"a brand new secret {n}"), timeout=5)
    before = passwords.hashes

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.UpdateUser(a_change(ann, password="yet another secret"), timeout=5)

    assert caught.value.code() == EXHAUSTED
    wait = int(dict(caught.value.trailing_metadata() or ())[RETRY_AFTER_METADATA])
    assert 0 < wait <= password_changes.WINDOW_SECONDS
    assert caught.value.details() == f"too many password changes for this user; retry after {wait} s"
    assert passwords.hashes == before  # refused before any hash
    await stub.UpdateUser(a_change(bob), timeout=5)  # another account has its own budget
    await stub.UpdateUser(a_change(ann, caller=STAFF), timeout=5)  # staff are not counted
    clock.now += wait
    await stub.UpdateUser(a_change(ann, password="the next window's secret"), timeout=5)


# --- usernames are one name whatever their case ---


async def test_bob_beside_bob_is_refused_everywhere(stub: UserServiceAsyncStub) -> None:
    bob = await create(stub, a_user("bob"))
    eve = await create(stub, a_user("eve"))

    with fails(ALREADY_EXISTS, "username Bob is taken"):
        await stub.CreateUser(
            user_service_pb2.CreateUserRequest(
                caller=callers.anonymous(), user=a_user("Bob"), password=PASSWORD
            ),
            timeout=5,
        )
    with fails(ALREADY_EXISTS, "users[1]: username BOB is taken"):
        await stub.CreateUsers(
            user_service_pb2.CreateUsersRequest(
                caller=STAFF, users=[a_create(a_user("new")), a_create(a_user("BOB"))]
            ),
            timeout=5,
        )
    rename = user_service_pb2.UpdateUserRequest(username="eve", user=a_user("Bob"), caller=caller(eve.id))
    with fails(ALREADY_EXISTS, "username Bob is taken"):
        await stub.UpdateUser(rename, timeout=5)
    assert (await get(stub, "bob")) == bob


async def test_look_ups_find_the_user_whatever_the_case(stub: UserServiceAsyncStub) -> None:
    bob = await create(stub, a_user("bob"))

    assert (await get(stub, "BOB")) == bob
    token = (await login(stub, "BoB")).session_token
    assert jwt.decode(token, options={"verify_signature": False})["name"] == "bob"
    edit = user_service_pb2.UpdateUserRequest(
        username="BOB", user=a_user("bob", phone="1"), caller=caller(bob.id)
    )
    assert (await stub.UpdateUser(edit, timeout=5)).user.phone == "1"
    await stub.DeleteUser(
        user_service_pb2.DeleteUserRequest(username="Bob", caller=caller(bob.id)), timeout=5
    )
    with fails(NOT_FOUND, "user bob not found"):
        await get(stub, "bob")


# --- failed logins are throttled per account and source ---

OWNER = "198.51.100.20"


def login_from(
    stub: UserServiceAsyncStub, address: str, password: str = PASSWORD, username: str = "ann"
) -> Awaitable[user_service_pb2.LoginResponse]:
    request = user_service_pb2.LoginRequest(username=username, password=password, client_address=address)
    return stub.Login(request, timeout=5)


async def status_of(reply: Awaitable[object]) -> grpc.StatusCode:
    try:
        await reply
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


async def test_a_strangers_guesses_do_not_lock_out_the_owner_from_elsewhere(
    stub: UserServiceAsyncStub,
) -> None:
    await create(stub, a_user())
    guesser = "203.0.113.7"

    codes = [
        await status_of(login_from(stub, guesser, WRONG)) for _ in range(3 * login_throttle.FREE_FAILURES)
    ]

    assert codes.count(INVALID) == login_throttle.FREE_FAILURES
    assert codes.count(EXHAUSTED) == 2 * login_throttle.FREE_FAILURES  # the guesser waits
    assert await status_of(login_from(stub, guesser)) == EXHAUSTED  # even with the right password
    assert (await login_from(stub, OWNER)).session_token  # the owner, never seen before, is in


async def test_an_ipv6_source_is_its_whole_64(stub: UserServiceAsyncStub) -> None:
    await create(stub, a_user())
    for n in range(login_throttle.FREE_FAILURES):
        assert await status_of(login_from(stub, f"2001:db8:1:2::{n + 1:x}", WRONG)) == INVALID

    assert await status_of(login_from(stub, "2001:db8:1:2:ffff::9")) == EXHAUSTED
    assert (await login_from(stub, "2001:db8:1:3::1")).session_token


async def test_guessing_from_many_sources_slows_down_new_sources_but_not_the_owners(
    stub: UserServiceAsyncStub,
) -> None:
    await create(stub, a_user())
    await login_from(stub, OWNER)  # the owner's usual source

    async def one_guess(n: int) -> grpc.StatusCode:
        return await status_of(login_from(stub, f"10.0.{n // 250}.{n % 250 + 1}", WRONG))

    codes = await asyncio.gather(*(one_guess(n) for n in range(2 * login_throttle.ACCOUNT_FREE_FAILURES)))

    # One guess from each address: only the account-wide count stops them.
    assert codes.count(INVALID) == login_throttle.ACCOUNT_FREE_FAILURES
    assert codes.count(EXHAUSTED) == login_throttle.ACCOUNT_FREE_FAILURES
    assert await status_of(login_from(stub, "192.0.2.99")) == EXHAUSTED  # a new source waits
    assert await status_of(login(stub)) == EXHAUSTED  # so does an older gateway's (no address)
    assert (await login_from(stub, OWNER)).session_token  # the owner's source does not


async def test_a_login_without_an_address_is_one_unknown_source(stub: UserServiceAsyncStub) -> None:
    """An older gateway sends no address: it is throttled as one source, as before."""
    await create(stub, a_user())
    await wrong_guesses(stub, login_throttle.FREE_FAILURES)

    assert await status_of(login(stub)) == EXHAUSTED
    assert (await login_from(stub, OWNER)).session_token


async def test_only_a_digest_of_the_address_is_stored(
    stub: UserServiceAsyncStub, store: MemoryUserStore
) -> None:
    ann = await create(stub, a_user())
    await status_of(login_from(stub, "203.0.113.7", WRONG))

    assert await store.login_source(ann.id, "203.0.113.7") == LoginSource()
    assert "203.0.113.7" not in repr(vars(store))


# --- logins have their own hashing lane ---


class SlowNewPasswords(Passwords):
    """New passwords take SECONDS each: a flood of sign-ups on a small machine."""

    SECONDS = 0.25

    def _hash(self, password: str) -> str:
        time.sleep(self.SECONDS)
        return super()._hash(password)


@pytest.fixture
def slow_passwords() -> Iterator[Passwords]:
    passwords = SlowNewPasswords(new_password=LaneBound("new-password", workers=1, queued=4))
    try:
        yield passwords
    finally:
        passwords.close()


@pytest.fixture
async def slow_stub(
    store: MemoryUserStore, slow_passwords: Passwords, tokens: SessionTokens
) -> AsyncIterator[UserServiceAsyncStub]:
    settings = ServiceSettings.from_env(
        default_port=0, default_database="unused", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    service = await start_service(build_definition(store, slow_passwords, tokens), settings)
    try:
        async with signed_channel(f"127.0.0.1:{service.port}") as channel:
            yield user_service_pb2_grpc.UserServiceStub(channel)
    finally:
        await service.stop(None)


async def test_a_flood_of_sign_ups_neither_delays_a_login_nor_queues_without_bound(
    slow_stub: UserServiceAsyncStub, store: MemoryUserStore
) -> None:
    ann = await store.create(Account(a_user(), PasswordHasher.from_parameters(PARAMETERS).hash(PASSWORD)))

    async def sign_up(n: int) -> grpc.StatusCode:
        request = user_service_pb2.CreateUserRequest(
            caller=callers.anonymous(), user=a_user(f"flood{n}"), password=PASSWORD
        )
        return await status_of(slow_stub.CreateUser(request, timeout=10))

    flood = asyncio.gather(*(sign_up(n) for n in range(12)))
    await asyncio.sleep(0.1)
    started = time.perf_counter()
    assert (await login(slow_stub)).session_token
    waited = time.perf_counter() - started
    codes = await flood

    # One pool would have queued the login behind 5 sign-ups (1.25 s); its lane is free.
    assert waited < SlowNewPasswords.SECONDS
    assert codes.count(grpc.StatusCode.OK) == 5  # one hashing, four waiting
    assert codes.count(grpc.StatusCode.UNAVAILABLE) == 7  # refused at once, nothing queued
    assert ann.id
