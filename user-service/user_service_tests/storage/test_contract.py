"""One contract, both stores: the embedded store must behave exactly like the MongoDB one."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from petstore.user.v1 import user_pb2
from petstore_common.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from petstore_user.storage.base import Account, LoginFailures, LoginSource, Session, UserStore
from petstore_user.storage.documents import Document
from petstore_user.storage.memory import MemoryUserStore
from petstore_user.storage.mongo import MongoUserStore

HASH = "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"
NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def memory_store() -> MemoryUserStore:
    return MemoryUserStore()


@pytest.fixture
async def mongo_store(mongo_db: AsyncDatabase[Document]) -> MongoUserStore:
    store = MongoUserStore(mongo_db)
    await store.ensure_indexes()
    return store


@pytest.fixture(params=["memory", pytest.param("mongo", marks=pytest.mark.mongo)])
def store(request: pytest.FixtureRequest) -> UserStore:
    implementation: UserStore = request.getfixturevalue(f"{request.param}_store")
    return implementation


def a_user(username: str = "ann", **fields: object) -> user_pb2.User:
    return user_pb2.User(username=username, email=f"{username}@example.com", **fields)  # type: ignore[arg-type]


def a_full_user(username: str = "ann", version: int = 0) -> user_pb2.User:
    return user_pb2.User(
        username=username,
        first_name="Ann",
        last_name="Lee",
        email=f"{username}@example.com",
        phone="+44 20 7946 0000",
        user_status=3,
        version=version,
    )


def an_account(user: user_pb2.User, password_hash: str = HASH) -> Account:
    return Account(user, password_hash)


def without_id(user: user_pb2.User) -> user_pb2.User:
    copy = user_pb2.User()
    copy.CopyFrom(user)
    copy.ClearField("id")
    return copy


async def test_create_then_get_round_trips_every_field(store: UserStore) -> None:
    created = await store.create(an_account(a_full_user()))

    assert created.HasField("id")
    assert created.id > 0
    assert without_id(created) == a_full_user(version=1)
    assert await store.get("ann") == created
    account = await store.get_account("ann")
    assert (account.user, account.password_hash) == (created, HASH)


async def test_assigned_ids_are_distinct_and_increasing(store: UserStore) -> None:
    ids = [(await store.create(an_account(a_user(f"u{n}")))).id for n in range(3)]

    assert ids == sorted(set(ids))
    assert ids[0] > 0


async def test_a_client_chosen_id_is_kept_and_skipped_by_allocation(store: UserStore) -> None:
    chosen = await store.create(an_account(a_user("chosen", id=2)))

    assigned = [(await store.create(an_account(a_user(f"u{n}")))).id for n in range(2)]

    assert chosen.id == 2
    assert assigned == [1, 3]


async def test_a_taken_id_is_already_exists(store: UserStore) -> None:
    await store.create(an_account(a_user("ann", id=7)))

    with pytest.raises(AlreadyExists, match=r"^user id 7 is taken$"):
        await store.create(an_account(a_user("bob", id=7)))
    with pytest.raises(NotFound):
        await store.get("bob")


async def test_a_taken_username_is_already_exists_and_never_overwrites(store: UserStore) -> None:
    first = await store.create(an_account(a_user("ann", first_name="First")))

    with pytest.raises(AlreadyExists, match=r"^username ann is taken$"):
        await store.create(an_account(a_user("ann", first_name="Second"), "other-hash"))
    with pytest.raises(AlreadyExists, match=r"^username ann is taken$"):
        await store.create(an_account(a_user("ann", id=50)))
    assert await store.get("ann") == first
    assert (await store.get_account("ann")).password_hash == HASH


async def test_usernames_are_unique_and_found_without_regard_to_case(store: UserStore) -> None:
    bob = await store.create(an_account(a_user("bob")))

    for twin in ("Bob", "BOB", "bOb"):
        with pytest.raises(AlreadyExists, match=rf"^username {twin} is taken$"):
            await store.create(an_account(a_user(twin)))
    assert await store.get("BOB") == bob
    assert (await store.get_account("Bob")).user == bob


async def test_a_batch_refuses_a_name_differing_only_in_case(store: UserStore) -> None:
    await store.create(an_account(a_user("bob")))

    with pytest.raises(AlreadyExists, match=r"^users\[1\]: username Bob is taken$"):
        await store.create_many([an_account(a_user("cat")), an_account(a_user("Bob"))])
    with pytest.raises(InvalidArgument, match=r"^users\[1\]: duplicate username$"):
        await store.create_many([an_account(a_user("dan")), an_account(a_user("DAN"))])
    with pytest.raises(NotFound):
        await store.get("cat")


async def test_a_rename_onto_another_case_of_a_taken_name_is_refused(store: UserStore) -> None:
    await store.create(an_account(a_user("bob")))
    eve = await store.create(an_account(a_user("eve")))

    with pytest.raises(AlreadyExists, match=r"^username Bob is taken$"):
        await store.update(eve.id, "eve", a_user("Bob"), None)
    # Its own name in another case is its own.
    renamed = await store.update(eve.id, "eve", a_user("Eve"), None)
    assert (await store.get("eve")) == renamed
    assert renamed.username == "Eve"


async def test_racing_creates_of_one_username_store_it_once(store: UserStore) -> None:
    outcomes = await asyncio.gather(
        *(store.create(an_account(a_user("racer", first_name=str(n)))) for n in range(12)),
        return_exceptions=True,
    )

    created = [outcome for outcome in outcomes if isinstance(outcome, user_pb2.User)]
    refused = [outcome for outcome in outcomes if isinstance(outcome, AlreadyExists)]
    assert (len(created), len(refused)) == (1, 11)
    assert {error.message for error in refused} == {"username racer is taken"}
    assert await store.get("racer") == created[0]


async def test_concurrent_creates_get_distinct_ids(store: UserStore) -> None:
    created = await asyncio.gather(*(store.create(an_account(a_user(f"user{n}"))) for n in range(40)))

    assert len({user.id for user in created}) == 40
    for user in created:
        assert (await store.get(user.username)).id == user.id


async def test_get_of_an_unknown_username_is_not_found(store: UserStore) -> None:
    with pytest.raises(NotFound, match=r"^user zed not found$"):
        await store.get("zed")
    with pytest.raises(NotFound, match=r"^user zed not found$"):
        await store.get_account("zed")


async def test_create_many_stores_every_user_in_order(store: UserStore) -> None:
    created = await store.create_many([an_account(a_user(name)) for name in ("ann", "bob", "cat")])

    assert [user.username for user in created] == ["ann", "bob", "cat"]
    assert len({user.id for user in created}) == 3
    for user in created:
        assert await store.get(user.username) == user


async def test_create_many_with_a_taken_third_username_stores_none(store: UserStore) -> None:
    existing = await store.create(an_account(a_user("cat")))

    batch = [an_account(a_user(name)) for name in ("ann", "bob", "cat", "dan")]
    with pytest.raises(AlreadyExists, match=r"^users\[2\]: username cat is taken$"):
        await store.create_many(batch)

    for name in ("ann", "bob", "dan"):
        with pytest.raises(NotFound):
            await store.get(name)
    assert await store.get("cat") == existing


async def test_create_many_with_a_taken_id_stores_none(store: UserStore) -> None:
    await store.create(an_account(a_user("cat", id=9)))

    with pytest.raises(AlreadyExists, match=r"^users\[1\]: user id 9 is taken$"):
        await store.create_many([an_account(a_user("ann")), an_account(a_user("bob", id=9))])
    with pytest.raises(NotFound):
        await store.get("ann")


@pytest.mark.parametrize(
    ("users", "message"),
    [
        ([a_user("ann"), a_user("bob"), a_user("ann")], r"^users\[2\]: duplicate username$"),
        ([a_user("ann", id=4), a_user("bob", id=4)], r"^users\[1\]: duplicate id$"),
    ],
)
async def test_create_many_with_repeats_stores_none(
    store: UserStore, users: list[user_pb2.User], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        await store.create_many([an_account(user) for user in users])
    with pytest.raises(NotFound):
        await store.get("ann")


async def test_update_replaces_every_field_but_the_id(store: UserStore) -> None:
    created = await store.create(an_account(a_full_user()))
    replacement = user_pb2.User(id=999, username="ann", email="new@example.com")

    updated = await store.update(created.id, "ann", replacement, None)

    assert updated == user_pb2.User(id=created.id, username="ann", email="new@example.com", version=2)
    assert await store.get("ann") == updated
    assert (await store.get_account("ann")).password_hash == HASH


async def test_update_with_a_hash_replaces_the_hash(store: UserStore) -> None:
    created = await store.create(an_account(a_user()))

    await store.update(created.id, "ann", a_user(), "new-hash")

    assert (await store.get_account("ann")).password_hash == "new-hash"


async def test_update_can_rename(store: UserStore) -> None:
    created = await store.create(an_account(a_user("ann")))

    renamed = await store.update(created.id, "ann", a_user("anne"), None)

    assert (renamed.id, renamed.username) == (created.id, "anne")
    assert await store.get("anne") == renamed
    with pytest.raises(NotFound):
        await store.get("ann")
    assert (await store.create(an_account(a_user("ann")))).id != created.id  # the old name is free


async def test_renaming_onto_a_taken_username_is_already_exists(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    bob = await store.create(an_account(a_user("bob")))

    with pytest.raises(AlreadyExists, match=r"^username bob is taken$"):
        await store.update(ann.id, "ann", a_user("bob", first_name="Ann"), "other-hash")

    assert await store.get("ann") == ann
    assert await store.get("bob") == bob
    assert (await store.get_account("ann")).password_hash == HASH


async def test_racing_renames_onto_one_username_store_it_once(store: UserStore) -> None:
    users = [await store.create(an_account(a_user(f"user{n}"))) for n in range(6)]

    outcomes = await asyncio.gather(
        *(store.update(user.id, user.username, a_user("wanted"), None) for user in users),
        return_exceptions=True,
    )

    assert sum(isinstance(outcome, user_pb2.User) for outcome in outcomes) == 1
    assert sum(isinstance(outcome, AlreadyExists) for outcome in outcomes) == 5


async def test_update_needs_the_id_and_the_current_username(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    await store.create(an_account(a_user("bob")))

    with pytest.raises(NotFound, match=r"^user zed not found$"):
        await store.update(ann.id, "zed", a_user("zed"), None)
    with pytest.raises(NotFound, match=r"^user bob not found$"):
        await store.update(ann.id, "bob", a_user("bob", first_name="x"), None)  # bob is not user ann.id
    assert (await store.get("bob")).first_name == ""


async def test_replace_password_hash_only_replaces_the_expected_hash(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))

    await store.replace_password_hash(ann.id, "not-the-current-hash", "lost")
    assert (await store.get_account("ann")).password_hash == HASH

    await store.replace_password_hash(ann.id, HASH, "stronger")
    assert (await store.get_account("ann")).password_hash == "stronger"


async def test_delete_removes_the_user_and_its_sessions(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    bob = await store.create(an_account(a_user("bob")))
    await store.add_session(Session("a" * 32, ann.id, NOW + timedelta(hours=1)), HASH)
    await store.add_session(Session("b" * 32, bob.id, NOW + timedelta(hours=1)), HASH)

    await store.delete(ann.id, "ann")

    with pytest.raises(NotFound):
        await store.get("ann")
    assert not await store.is_session_active("a" * 32, NOW)
    assert await store.is_session_active("b" * 32, NOW)
    with pytest.raises(NotFound, match=r"^user ann not found$"):
        await store.delete(ann.id, "ann")
    with pytest.raises(NotFound, match=r"^user bob not found$"):
        await store.delete(ann.id, "bob")  # bob is not user ann.id
    assert await store.get("bob") == bob


async def test_a_deleted_users_id_is_never_given_again(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    chosen = await store.create(an_account(a_user("cid", id=ann.id + 1)))
    await store.delete(ann.id, "ann")
    await store.delete(chosen.id, "cid")

    # Not when asked for it (only staff may ask), not when the username comes back, not drawn.
    for retired in (ann.id, chosen.id):
        with pytest.raises(AlreadyExists, match=rf"^user id {retired} is taken$"):
            await store.create(an_account(a_user("eve", id=retired)))
    again = await store.create(an_account(a_user("ann")))
    drawn = [(await store.create(an_account(a_user(f"u{n}")))).id for n in range(3)]
    assert {again.id, *drawn}.isdisjoint({ann.id, chosen.id})
    with pytest.raises(AlreadyExists, match=rf"^users\[1\]: user id {ann.id} is taken$"):
        await store.create_many([an_account(a_user("x1")), an_account(a_user("x2", id=ann.id))])
    with pytest.raises(NotFound):
        await store.delete(ann.id, "ann")  # the new ann has another id
    assert (await store.get("ann")).id == again.id


async def test_no_session_is_added_for_a_deleted_user(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    await store.delete(ann.id, "ann")

    with pytest.raises(NotFound):
        await store.add_session(Session("s" * 32, ann.id, NOW + timedelta(hours=1)), HASH)
    assert not await store.is_session_active("s" * 32, NOW)


async def test_no_session_is_added_once_the_password_changed(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    await store.update(ann.id, "ann", a_user("ann"), "a-new-hash")

    with pytest.raises(NotFound):
        await store.add_session(Session("s" * 32, ann.id, NOW + timedelta(hours=1)), HASH)
    assert not await store.is_session_active("s" * 32, NOW)
    await store.add_session(Session("t" * 32, ann.id, NOW + timedelta(hours=1)), "a-new-hash")
    assert await store.is_session_active("t" * 32, NOW)


async def test_ending_the_sessions_of_a_user_leaves_others(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    bob = await store.create(an_account(a_user("bob")))
    await store.add_session(Session("a" * 32, ann.id, NOW + timedelta(hours=1)), HASH)
    await store.add_session(Session("c" * 32, ann.id, NOW + timedelta(hours=1)), HASH)
    await store.add_session(Session("b" * 32, bob.id, NOW + timedelta(hours=1)), HASH)

    await store.end_sessions_of(ann.id)

    assert not await store.is_session_active("a" * 32, NOW)
    assert not await store.is_session_active("c" * 32, NOW)
    assert await store.is_session_active("b" * 32, NOW)


async def test_ending_the_sessions_of_a_user_may_keep_one(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    bob = await store.create(an_account(a_user("bob")))
    await store.add_session(Session("a" * 32, ann.id, NOW + timedelta(hours=1)), HASH)
    await store.add_session(Session("c" * 32, ann.id, NOW + timedelta(hours=1)), HASH)
    await store.add_session(Session("b" * 32, bob.id, NOW + timedelta(hours=1)), HASH)

    await store.end_sessions_of(ann.id, keep="a" * 32)
    await store.end_sessions_of(bob.id, keep="a" * 32)  # not bob's: keeps nothing of bob's

    assert await store.is_session_active("a" * 32, NOW)
    assert not await store.is_session_active("c" * 32, NOW)
    assert not await store.is_session_active("b" * 32, NOW)


async def test_login_sources_are_counted_per_user_and_source(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    bob = await store.create(an_account(a_user("bob")))
    assert await store.login_source(ann.id, "s1") == LoginSource()

    for second in range(1, 4):
        counted = await store.record_source_failure(ann.id, "s1", 1000.0 + second, forget_before=0.0)
        assert counted == LoginFailures(second, 1000.0 + second)
    await store.record_source_failure(ann.id, "s2", 1010.0, forget_before=0.0)

    assert await store.login_source(ann.id, "s1") == LoginSource(LoginFailures(3, 1003.0))
    assert await store.login_source(ann.id, "s2") == LoginSource(LoginFailures(1, 1010.0))
    assert await store.login_source(bob.id, "s1") == LoginSource()
    assert (await store.get("ann")) == ann  # not a change of the user
    # Counting starts again after forget_before.
    assert await store.record_source_failure(ann.id, "s2", 9000.0, forget_before=1010.0) == LoginFailures(
        1, 9000.0
    )

    await store.record_source_success(ann.id, "s1", 2000.0)
    assert await store.login_source(ann.id, "s1") == LoginSource(succeeded_at=2000.0)
    await store.record_source_failure(ann.id, "s1", 2001.0, forget_before=0.0)
    assert await store.login_source(ann.id, "s1") == LoginSource(LoginFailures(1, 2001.0), 2000.0)


async def test_concurrent_source_failures_are_all_counted(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))

    await asyncio.gather(
        *(store.record_source_failure(ann.id, "s", 1000.0 + n, forget_before=0.0) for n in range(8))
    )

    assert (await store.login_source(ann.id, "s")).failures.count == 8


async def test_stale_login_sources_and_a_deleted_users_are_forgotten(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    bob = await store.create(an_account(a_user("bob")))
    await store.record_source_failure(ann.id, "failed-long-ago", 1000.0, forget_before=0.0)
    await store.record_source_failure(ann.id, "failed-lately", 5000.0, forget_before=0.0)
    await store.record_source_success(ann.id, "known", 1000.0)
    await store.record_source_success(ann.id, "known-lately", 5000.0)
    await store.record_source_failure(bob.id, "s", 5000.0, forget_before=0.0)

    assert await store.delete_stale_login_sources(failed_before=2000.0, succeeded_before=2000.0) == 2
    assert await store.login_source(ann.id, "failed-long-ago") == LoginSource()
    assert await store.login_source(ann.id, "known") == LoginSource()
    assert (await store.login_source(ann.id, "failed-lately")).failures.count == 1
    assert (await store.login_source(ann.id, "known-lately")).succeeded_at == 5000.0

    await store.delete(bob.id, "bob")
    assert await store.login_source(bob.id, "s") == LoginSource()
    assert await store.record_source_failure(bob.id, "s", 5001.0, forget_before=0.0) == LoginFailures()


async def test_password_changes_are_budgeted_per_user_and_window(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    bob = await store.create(an_account(a_user("bob")))

    spent = [await store.spend_password_change(ann.id, 1000.0 + n, 3600.0, 3) for n in range(4)]

    assert spent == [0, 0, 0, 3600 - 3]  # the fourth waits until the window that began at 1000 ends
    assert await store.spend_password_change(bob.id, 1010.0, 3600.0, 3) == 0
    assert await store.spend_password_change(ann.id, 4600.0, 3600.0, 3) == 0  # a new window
    assert (await store.get("ann")) == ann  # not a change of the user


async def test_racing_password_changes_take_no_more_than_the_budget(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))

    waits = await asyncio.gather(*(store.spend_password_change(ann.id, 1000.0, 3600.0, 3) for _ in range(10)))

    assert waits.count(0) == 3


async def test_login_failures_are_counted_per_user_and_read_with_the_account(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    bob = await store.create(an_account(a_user("bob")))
    assert (await store.get_account("ann")).failures == LoginFailures()

    for second in range(1, 4):
        counted = await store.record_login_failure(ann.id, 1000.0 + second, forget_before=0.0)
        assert counted == LoginFailures(second, 1000.0 + second)
    assert (await store.get_account("ann")).failures == LoginFailures(3, 1003.0)
    assert (await store.get_account("bob")).failures == LoginFailures()
    # Not a change of the user: its version and fields stay.
    assert (await store.get("ann")) == ann

    await store.clear_login_failures(ann.id)
    assert (await store.get_account("ann")).failures == LoginFailures()
    await store.clear_login_failures(bob.id)  # nothing to clear


async def test_old_login_failures_are_forgotten(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    await store.record_login_failure(ann.id, 1000.0, forget_before=0.0)
    await store.record_login_failure(ann.id, 1001.0, forget_before=0.0)

    # The last failure was at or before forget_before: counting starts again.
    assert await store.record_login_failure(ann.id, 5000.0, forget_before=1001.0) == LoginFailures(1, 5000.0)
    assert await store.record_login_failure(ann.id, 5001.0, forget_before=1001.0) == LoginFailures(2, 5001.0)


async def test_login_failures_of_a_deleted_user_are_not_kept(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    await store.record_login_failure(ann.id, 1000.0, forget_before=0.0)
    await store.delete(ann.id, "ann")

    assert await store.record_login_failure(ann.id, 1001.0, forget_before=0.0) == LoginFailures()
    await store.create(an_account(a_user("ann")))
    assert (await store.get_account("ann")).failures == LoginFailures()


async def test_concurrent_login_failures_are_all_counted(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))

    await asyncio.gather(
        *(store.record_login_failure(ann.id, 1000.0 + n, forget_before=0.0) for n in range(8))
    )

    assert (await store.get_account("ann")).failures.count == 8


async def test_a_session_is_active_until_it_expires(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    expires_at = NOW + timedelta(minutes=5)
    await store.add_session(Session("s" * 32, ann.id, expires_at), HASH)

    assert await store.is_session_active("s" * 32, NOW)
    assert await store.is_session_active("s" * 32, expires_at - timedelta(seconds=1))
    assert not await store.is_session_active("s" * 32, expires_at)
    assert not await store.is_session_active("unknown", NOW)


async def test_an_ended_session_is_inactive_and_ending_is_idempotent(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    await store.add_session(Session("s" * 32, ann.id, NOW + timedelta(hours=1)), HASH)
    await store.add_session(Session("t" * 32, ann.id, NOW + timedelta(hours=1)), HASH)

    await store.end_session("s" * 32)
    await store.end_session("s" * 32)
    await store.end_session("unknown")

    assert not await store.is_session_active("s" * 32, NOW)
    assert await store.is_session_active("t" * 32, NOW)


async def test_a_session_of_an_unknown_user_is_not_stored(store: UserStore) -> None:
    with pytest.raises(NotFound, match=r"^user 77 not found$"):
        await store.add_session(Session("s" * 32, 77, NOW + timedelta(hours=1)), HASH)

    await store.create(an_account(a_user("ann", id=77)))
    assert not await store.is_session_active("s" * 32, NOW)


async def test_expired_sessions_are_deleted(store: UserStore) -> None:
    ann = await store.create(an_account(a_user("ann")))
    await store.add_session(Session("old", ann.id, NOW - timedelta(seconds=1)), HASH)
    await store.add_session(Session("now", ann.id, NOW), HASH)
    await store.add_session(Session("new", ann.id, NOW + timedelta(seconds=1)), HASH)

    assert await store.delete_expired_sessions(NOW) == 2
    assert await store.delete_expired_sessions(NOW) == 0

    assert await store.is_session_active("new", NOW)
    await store.end_session("new")
    assert await store.delete_expired_sessions(NOW + timedelta(seconds=1)) == 1


async def test_stored_users_are_copies(store: UserStore) -> None:
    user = a_user()
    created = await store.create(an_account(user))
    user.first_name = "changed by the caller"
    created.first_name = "changed too"

    assert (await store.get("ann")).first_name == ""


async def test_a_conditional_update_needs_the_stored_version(store: UserStore) -> None:
    created = await store.create(an_account(a_full_user()))

    with pytest.raises(FailedPrecondition):
        await store.update(created.id, "ann", a_user(), None, accepted_versions={created.version + 1})
    assert await store.get("ann") == created
    updated = await store.update(created.id, "ann", a_user(), None, accepted_versions={created.version})
    assert updated.version == created.version + 1
