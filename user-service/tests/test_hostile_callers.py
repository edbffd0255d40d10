"""UserService from the side of callers who must be refused: ids they choose, accounts they
guess at, sessions they keep after a password change. Same in-process server as test_servicer."""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc
import pytest

from petstore.user.v1 import user_service_pb2
from petstore_common import callers
from petstore_common.errors import RETRY_AFTER_METADATA
from petstore_user import login_throttle
from petstore_user.passwords import Passwords
from petstore_user.storage.memory import MemoryUserStore
from tests.test_servicer import (  # noqa: F401 (fixtures)
    INVALID,
    PASSWORD,
    STAFF,
    Clock,
    a_create,
    a_user,
    caller,
    channel,
    clock,
    create,
    fails,
    get,
    is_active,
    login,
    passwords,
    running,
    session_id,
    store,
    stub,
    tokens,
)

if TYPE_CHECKING:
    from petstore.user.v1.user_service_pb2_grpc import UserServiceAsyncStub

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


async def test_a_password_change_ends_every_session_of_the_account(stub: UserServiceAsyncStub) -> None:
    ann = await create(stub, a_user())
    bob = await create(stub, a_user("bob"))
    changing, other = (await login(stub)).session_token, (await login(stub)).session_token
    bobs = (await login(stub, "bob")).session_token

    await stub.UpdateUser(
        user_service_pb2.UpdateUserRequest(
            username="ann", user=a_user(), password="a brand new secret", caller=caller(ann.id)
        ),
        timeout=5,
    )

    assert not await is_active(stub, session_id(other))
    assert not await is_active(stub, session_id(changing))  # the one that made it too
    assert await is_active(stub, session_id(bobs))
    assert bob.id != ann.id


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
        ("abc", "password must be at least 8 characters"),
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
