"""Argon2id hashes: the real parameters, off the event loop, bounded, and upgraded when weak."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from argon2 import Parameters, PasswordHasher, Type, extract_parameters

from petstore.user.v1 import user_service_pb2
from petstore_common.errors import InvalidArgument, Unavailable
from petstore_common.rules import field_rules
from petstore_user.common_passwords import common_passwords, is_common
from petstore_user.passwords import (
    LANE_FULL,
    LOGIN_LANE,
    MAX_CONCURRENT_HASHES,
    MAX_PASSWORD_CHARS,
    MIN_PASSWORD_CHARS,
    NEW_PASSWORD_LANE,
    PARAMETERS,
    LaneBound,
    Passwords,
    check_password,
    map_hash_memory_directly,
)

CHEAP = Parameters(
    type=Type.ID, version=19, salt_len=16, hash_len=32, time_cost=1, memory_cost=8, parallelism=1
)


@pytest.fixture
def passwords() -> Iterator[Passwords]:
    passwords = Passwords()
    try:
        yield passwords
    finally:
        passwords.close()


def test_the_parameters_are_owasps_argon2id_minimum() -> None:
    assert (PARAMETERS.type, PARAMETERS.time_cost, PARAMETERS.memory_cost, PARAMETERS.parallelism) == (
        Type.ID,
        2,
        19_456,
        1,
    )


async def test_a_hash_verifies_only_its_own_password(passwords: Passwords) -> None:
    password_hash = await passwords.hash("correct horse battery staple")

    assert password_hash.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert "correct horse" not in password_hash
    assert extract_parameters(password_hash) == PARAMETERS
    assert await passwords.verify(password_hash, "correct horse battery staple")
    assert not await passwords.verify(password_hash, "correct horse battery stapler")
    assert not passwords.needs_rehash(password_hash)


async def test_the_same_password_hashes_differently_each_time(passwords: Passwords) -> None:
    first, second = await asyncio.gather(passwords.hash("pw"), passwords.hash("pw"))

    assert first != second
    assert await passwords.verify(first, "pw")
    assert await passwords.verify(second, "pw")


async def test_an_unreadable_hash_verifies_nothing(passwords: Passwords) -> None:
    assert not await passwords.verify("not-a-hash", "pw")
    assert not await passwords.verify("$argon2id$v=19$m=8,t=1,p=1$AAAA$BBBB", "pw")


async def test_a_weaker_hash_verifies_but_needs_a_rehash(passwords: Passwords) -> None:
    weak = PasswordHasher.from_parameters(CHEAP).hash("pw")

    assert await passwords.verify(weak, "pw")
    assert passwords.needs_rehash(weak)


async def test_hashing_runs_off_the_event_loop_on_a_bounded_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: set[str] = set()
    original = PasswordHasher.hash

    def spy(hasher: PasswordHasher, password: str | bytes, *, salt: bytes | None = None) -> str:
        seen.add(threading.current_thread().name)
        return original(hasher, password, salt=salt)

    monkeypatch.setattr(PasswordHasher, "hash", spy)
    passwords = Passwords(CHEAP, new_password=LaneBound("new-password", workers=2, queued=20))
    try:
        await asyncio.gather(*(passwords.hash(f"pw{n}") for n in range(20)))
    finally:
        passwords.close()

    assert threading.main_thread().name not in seen
    assert 1 <= len(seen) <= 2
    assert all(name.startswith("argon2-new-password") for name in seen)


def test_the_lanes_together_bound_the_hashes_at_once() -> None:
    assert MAX_CONCURRENT_HASHES == LOGIN_LANE.workers + NEW_PASSWORD_LANE.workers == 2


class SlowHashes(Passwords):
    """New passwords take `seconds` each (a slow machine, or a flood); verifying is as usual."""

    def __init__(self, seconds: float, **lanes: LaneBound) -> None:
        super().__init__(CHEAP, **lanes)
        self.seconds = seconds

    def _hash(self, password: str) -> str:
        time.sleep(self.seconds)
        return super()._hash(password)


async def test_a_full_lane_refuses_at_once_and_takes_work_again_once_drained() -> None:
    passwords = SlowHashes(0.3, new_password=LaneBound("new-password", workers=1, queued=2))
    try:
        outcomes = await asyncio.gather(*(passwords.hash(f"pw{n}") for n in range(6)), return_exceptions=True)
        refused = [outcome for outcome in outcomes if isinstance(outcome, Unavailable)]
        assert len(refused) == 3  # one running, two waiting: the rest are turned away unqueued
        assert {error.message for error in refused} == {LANE_FULL}
        assert passwords.hashes == 3
        assert passwords.new_password_lane.admitted == 0
        assert await passwords.hash("again")
    finally:
        passwords.close()


async def test_a_caller_that_gives_up_keeps_its_job_counted_until_it_ends() -> None:
    passwords = SlowHashes(0.3, new_password=LaneBound("new-password", workers=1, queued=0))
    try:
        abandoned = asyncio.ensure_future(passwords.hash("pw"))
        await asyncio.sleep(0.05)
        abandoned.cancel()
        with pytest.raises(Unavailable):  # the thread is still busy with it
            await passwords.hash("pw2")
        await asyncio.sleep(0.4)
        assert await passwords.hash("pw3")
    finally:
        passwords.close()


async def test_a_flood_of_new_passwords_does_not_delay_a_login() -> None:
    """With one pool, this login would wait behind every sign-up hash ahead of it."""
    passwords = SlowHashes(0.2, new_password=LaneBound("new-password", workers=1, queued=30))
    stored = PasswordHasher.from_parameters(CHEAP).hash("pw")
    try:
        flood = asyncio.gather(*(passwords.hash(f"pw{n}") for n in range(10)))
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        assert await passwords.verify(stored, "pw")
        waited = time.perf_counter() - started
        await flood
    finally:
        passwords.close()

    assert waited < 0.15  # not behind 2 s of sign-ups; a single cheap verification


@pytest.mark.parametrize("password", ["p" * 8, "p" * 128, "ünïcødé and spaces", "\x00\n" * 4, "Tr0ub4dor&3"])
def test_any_uncommon_password_is_accepted(password: str) -> None:
    check_password(password, username="ann")


def test_the_length_bounds_are_the_contracts_for_every_new_password() -> None:
    """8..128 characters: the field rules of a sign-up's password and a change's, which agree."""
    for rules in (
        field_rules(user_service_pb2.CreateUserRequest, "password").string,
        field_rules(user_service_pb2.UpdateUserRequest, "password").string,
    ):
        assert (rules.min_len, rules.max_len) == (MIN_PASSWORD_CHARS, MAX_PASSWORD_CHARS)
    assert (MIN_PASSWORD_CHARS, MAX_PASSWORD_CHARS) == (8, 128)  # NIST SP 800-63B's minimum, and the README's


COMMON = ["password", "12345678", "iloveyou", "PassWord1", "QWERTYUIOP", "baseball"]


@pytest.mark.parametrize("password", COMMON)
def test_a_common_password_is_refused_whatever_its_case(password: str) -> None:
    message = "password is one of the most common passwords: choose another"
    with pytest.raises(InvalidArgument, match=rf"^{message}$"):
        check_password(password)


def test_the_common_list_is_the_shipped_one_in_full() -> None:
    listed = common_passwords()
    assert len(listed) == 30_000
    assert is_common("dragon")
    assert not is_common("correct horse battery staple")


def test_the_username_is_no_password() -> None:
    with pytest.raises(InvalidArgument, match=r"^password must not be the username$"):
        check_password("Ann.Lee-1987", username="ann.lee-1987")


def test_hash_memory_can_be_mapped_directly_on_this_c_library() -> None:
    # Linux with glibc, as in the images: mallopt exists and accepts the threshold.
    assert map_hash_memory_directly() is True


def test_a_hash_that_ends_after_its_loop_closed_is_let_go_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """A stop closes the loop without waiting for a hash still on its thread; the thread's end
    then has no loop to tell, and says nothing (it logged "Event loop is closed" as an error)."""
    passwords = SlowHashes(0.3, new_password=LaneBound("new-password", workers=1, queued=0))
    loop = asyncio.new_event_loop()
    running = loop.create_task(passwords.hash("pw"))
    loop.run_until_complete(asyncio.sleep(0.05))  # the hash is on its thread
    running.cancel()
    loop.run_until_complete(asyncio.gather(running, return_exceptions=True))
    loop.close()
    passwords.close()
    time.sleep(0.5)  # the thread ends its hash

    assert [record.getMessage() for record in caplog.records if record.levelname == "ERROR"] == []
