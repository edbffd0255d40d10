"""Accounts from the attacker's side: ids taken over after a deletion, orders found by their
ids, passwords guessed or too weak, sessions kept after a logout, a password change or a
deletion, and budgets multiplied by sessions or reset by stale tokens.

The per-address limits are tried on a second gateway of the same stack with low limits (the
suite's own gateway has them out of its way): in process mode only, where this suite starts
the processes; that second gateway is also the "other replica" a revocation must reach.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from aiohttp import ClientSession, ClientTimeout, TCPConnector

from petstore_devstack.ports import free_port
from petstore_devstack.stack import ProcessSpec, Stack
from tests.e2e.callers import Cast, Customer, as_, new_pet, sign_up
from tests.e2e.client import JSON, Api, Reply, parse
from tests.e2e.conftest import E2E_MODE
from tests.e2e.control import ProcessControl, StackControl
from tests.e2e.test_users import PASSWORD, a_user, login

FREE_FAILURES = 5
"""The user service's free wrong passwords per account (login_throttle.FREE_FAILURES)."""


async def place_order(api: Api, token: str, pet_id: int, **fields: object) -> dict[str, object]:
    reply = await as_(api, token, "POST", "/store/order", JSON, {"petId": pet_id, "quantity": 1, **fields})
    assert reply.status == 200, reply.text
    return dict(reply.json)


async def test_a_deleted_accounts_id_orders_and_keys_are_nobody_elses(
    api: Api, cast: Cast, unique: str
) -> None:
    victim = cast.ann
    key = {"Idempotency-Key": f"k-{victim.username}"}
    order = await api.call(
        "POST",
        "/store/order",
        body=json.dumps({"petId": cast.pet["id"], "quantity": 1}),
        content_type=JSON,
        api_key=victim.token,
        headers=key,
    )
    assert order.status == 200, order.text
    assert (await as_(api, victim.token, "DELETE", f"/user/{victim.username}", JSON)).status == 200

    # The freed username, and the old id asked for outright: a fresh id all the same.
    taker = a_user("", username=victim.username, id=victim.user_id)
    signed = await api.send("POST", "/user", taker, JSON, key=False)
    assert signed.status == 200, signed.text
    assert int(signed.json["message"]) != victim.user_id
    token = await login(api, victim.username)

    assert (await as_(api, token, "GET", f"/store/order/{order.json['id']}", JSON)).status == 404
    assert (await as_(api, token, "DELETE", f"/store/order/{order.json['id']}", JSON)).status == 404
    # The old order still holds the cast's pet (an order reserves its pet): the key again, for
    # another pet. Were the key the old account's, that would be refused as the key reused.
    other_pet = await new_pet(api, f"{unique}-other")
    replay = await api.call(
        "POST",
        "/store/order",
        body=json.dumps({"petId": other_pet["id"], "quantity": 1}),
        content_type=JSON,
        api_key=token,
        headers=key,
    )
    assert replay.status == 200, replay.text
    assert replay.json["id"] != order.json["id"]  # a new order of its own, not the old replayed
    staff = await as_(api, api.static_key, "GET", f"/store/order/{order.json['id']}", JSON)
    assert staff.status == 200  # the deleted account's order: staff only


async def test_an_id_sent_at_sign_up_reveals_nothing(api: Api, cast: Cast, unique: str) -> None:
    # Bob's id (taken) and a free one are answered alike.
    for sent, name in ((cast.bob.user_id, "taken"), (cast.bob.user_id + 10_000_000, "free")):
        reply = await api.send("POST", "/user", a_user(f"{unique}{name}", id=sent), JSON, key=False)
        assert reply.status == 200, reply.text
        assert int(reply.json["message"]) != sent
    me = await as_(api, cast.bob.token, "GET", f"/user/{cast.bob.username}", JSON)
    assert me.json["id"] == cast.bob.user_id


async def test_an_order_id_a_customer_sends_reveals_nothing(api: Api, cast: Cast, unique: str) -> None:
    bobs = await place_order(api, cast.bob.token, int(cast.pet["id"]))
    for sent in (bobs["id"], int(str(bobs["id"])) + 10_000_000):
        pet = await new_pet(api, f"{unique}-{sent}")  # an order reserves its pet: one each
        anns = await place_order(api, cast.ann.token, int(pet["id"]), id=sent)
        assert anns["id"] != sent  # not "order N already exists", not the id asked for
    still = await as_(api, cast.bob.token, "GET", f"/store/order/{bobs['id']}", JSON)
    assert parse(still, JSON) == bobs


@pytest.mark.parametrize(
    ("password", "message"),
    [
        pytest.param(
            "pw", "password: must be at least 8 characters", marks=pytest.mark.since("user-service", "1.1.0")
        ),
        ("password1", "password is one of the most common passwords: choose another"),
        pytest.param(
            "p" * 129,
            "password: must be at most 128 characters",
            marks=pytest.mark.since("user-service", "1.1.0"),
        ),
    ],
)
async def test_weak_passwords_are_refused(api: Api, unique: str, password: str, message: str) -> None:
    reply = await api.send("POST", "/user", a_user(unique, password=password), JSON, key=False)
    assert reply.status == 400
    assert reply.error_message() == message


@pytest.mark.since("user-service", "1.1.0")
@pytest.mark.since("gateway", "1.1.0")
async def test_a_password_change_ends_every_other_session_at_once(api: Api, cast: Cast) -> None:
    ann = cast.ann
    other = await login(api, ann.username)
    change = {**a_user("", username=ann.username), "password": "a brand new secret"}
    changed = await as_(api, ann.token, "PUT", f"/user/{ann.username}", JSON, change)
    assert changed.status == 200, changed.text

    assert (await as_(api, other, "GET", f"/user/{ann.username}", JSON)).status == 401
    assert (await as_(api, ann.token, "GET", f"/user/{ann.username}", JSON)).status == 200  # the editor's
    assert await login(api, ann.username, "a brand new secret")
    assert (await as_(api, cast.bob.token, "GET", f"/user/{cast.bob.username}", JSON)).status == 200


@pytest.mark.since("user-service", "1.1.0")
async def test_a_profile_edit_resending_the_password_keeps_every_session(api: Api, cast: Cast) -> None:
    """Classic clients PUT the whole User, password included, to change a phone number."""
    ann = cast.ann
    other = await login(api, ann.username)
    edit = {**a_user("", username=ann.username), "phone": "555-0199"}  # PASSWORD, unchanged
    edited = await as_(api, ann.token, "PUT", f"/user/{ann.username}", JSON, edit)
    assert edited.status == 200, edited.text

    for token in (ann.token, other):
        reply = await as_(api, token, "GET", f"/user/{ann.username}", JSON)
        assert (reply.status, reply.json.get("phone")) == (200, "555-0199")


@pytest.mark.since("user-service", "1.1.0")
@pytest.mark.since("gateway", "1.1.0")  # it names the editor's session, which the change keeps
async def test_a_stale_if_match_password_change_is_412_and_changes_are_budgeted(api: Api, cast: Cast) -> None:
    ann = cast.ann
    change = {**a_user("", username=ann.username), "password": "a brand new secret"}
    stale = await api.call(
        "PUT",
        f"/user/{ann.username}",
        body=json.dumps(change),
        content_type=JSON,
        api_key=ann.token,
        headers={"If-Match": '"99"'},
    )
    assert stale.status == 412, stale.text
    assert await login(api, ann.username)  # nothing changed

    statuses = []
    for n in range(PASSWORD_CHANGES_PER_HOUR + 1):
        change["password"] = f"a brand new secret {n}"
        statuses.append(await as_(api, ann.token, "PUT", f"/user/{ann.username}", JSON, change))
    assert [reply.status for reply in statuses] == [200] * PASSWORD_CHANGES_PER_HOUR + [429]
    refused = statuses[-1]
    assert refused.error_message().startswith("too many password changes for this user; retry after ")
    assert 0 < int(refused.headers["Retry-After"]) <= 3600
    assert await login(api, ann.username, f"a brand new secret {PASSWORD_CHANGES_PER_HOUR - 1}")


async def test_a_deleted_accounts_token_is_refused_at_once(api: Api, cast: Cast) -> None:
    other = await login(api, cast.ann.username)
    assert (await as_(api, cast.ann.token, "DELETE", f"/user/{cast.ann.username}", JSON)).status == 200
    assert (await as_(api, other, "GET", f"/store/order/{1}", JSON)).status == 401


async def wrong_login(api: Api, username: str) -> int:
    reply = await api.call("GET", "/user/login", params={"username": username, "password": "not it at all"})
    return reply.status


async def test_guesses_at_one_account_make_it_wait_and_no_password_is_no_guess(api: Api, unique: str) -> None:
    owner = await sign_up(api, unique, "owner")
    for _ in range(3 * FREE_FAILURES):  # no password: refused, and not counted
        bare = await api.call("GET", "/user/login", params={"username": owner.username})
        assert (bare.status, bare.error_message()) == (400, "password is required")
    assert await login(api, owner.username)  # a good login clears nothing that was counted

    for _ in range(FREE_FAILURES):
        assert await wrong_login(api, owner.username) == 400
    refused = await api.call("GET", "/user/login", params={"username": owner.username, "password": PASSWORD})
    assert refused.status == 429
    assert refused.error_message() == "too many wrong passwords for this user; retry after 1 s"
    assert refused.headers["Retry-After"] == "1"
    await asyncio.sleep(1.1)  # the wait ends by itself
    assert await login(api, owner.username)
    assert owner.token


# --- guesses from other addresses (the client socket bound to another loopback address) ----

ACCOUNT_FREE_FAILURES = 20
"""The user service's free wrong passwords per account over all sources
(login_throttle.ACCOUNT_FREE_FAILURES)."""
PASSWORD_CHANGES_PER_HOUR = 6
"""The user service's password changes per account and hour (password_changes.PER_WINDOW)."""


@pytest.fixture
async def from_address(api: Api) -> AsyncIterator[Callable[[str], Awaitable[Api]]]:
    """Apis whose requests come from another 127.0.0.0/8 address (process mode: the gateway
    sees the socket's address; in containers every client is the port-forwarder)."""
    if E2E_MODE != "process":
        pytest.skip("the client's address can be chosen in process mode only")
    sessions: list[ClientSession] = []

    async def open_from(address: str) -> Api:
        connector = TCPConnector(local_addr=(address, 0))
        session = ClientSession(timeout=ClientTimeout(total=15), connector=connector)
        sessions.append(session)
        return Api(session, api.base_url, api.static_key)

    try:
        yield open_from
    finally:
        for session in sessions:
            await session.close()


async def login_status(api: Api, username: str, password: str) -> int:
    reply = await api.call("GET", "/user/login", params={"username": username, "password": password})
    return reply.status


@pytest.mark.since("user-service", "1.1.0")
@pytest.mark.since("gateway", "1.1.0")
async def test_guesses_from_elsewhere_do_not_lock_out_the_owner(
    api: Api, unique: str, from_address: Callable[[str], Awaitable[Api]]
) -> None:
    owner = await sign_up(api, unique, "owner")  # logged in from 127.0.0.1
    guesser = await from_address("127.0.0.7")

    statuses = await asyncio.gather(
        *(login_status(guesser, owner.username, f"guess {n}") for n in range(3 * FREE_FAILURES))
    )

    assert statuses.count(400) == FREE_FAILURES
    assert statuses.count(429) == 2 * FREE_FAILURES  # the guesser waits
    assert await login_status(guesser, owner.username, PASSWORD) == 429
    assert await login(api, owner.username)  # the owner does not


@pytest.mark.since("user-service", "1.1.0")
@pytest.mark.since("gateway", "1.1.0")
async def test_guessing_from_many_addresses_slows_down_new_ones_but_not_the_owners(
    api: Api, unique: str, from_address: Callable[[str], Awaitable[Api]]
) -> None:
    owner = await sign_up(api, unique, "owner")  # logged in from 127.0.0.1: its usual source
    guessers = [await from_address(f"127.0.1.{n + 1}") for n in range(ACCOUNT_FREE_FAILURES + 5)]

    statuses = [await login_status(guesser, owner.username, "not it") for guesser in guessers]

    assert statuses == [400] * ACCOUNT_FREE_FAILURES + [429] * 5  # each guessed once
    newcomer = await from_address("127.0.2.1")
    assert await login_status(newcomer, owner.username, PASSWORD) == 429
    assert await login(api, owner.username)


# --- a second gateway of the same stack, with low per-address limits -----------------------


LOW_LIMITS = {
    "RATE_LIMIT_PER_SECOND": "1",
    "RATE_LIMIT_BURST": "5",
    "LOGIN_RATE_LIMIT_PER_MINUTE": "2",
    "SIGNUP_RATE_LIMIT_PER_HOUR": "2",
}
BURST = 5


@pytest.fixture(scope="module")
def second_gateway(control: StackControl, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if E2E_MODE != "process" or not isinstance(control, ProcessControl):
        pytest.skip("a second gateway with low limits is started in process mode only")
    first = control.stack.processes["gateway"]
    port = free_port()
    # Same instance id as the first (its environment is copied), on a port of its own.
    extra = Stack(
        log_dir=Path(tmp_path_factory.mktemp("second-gateway")),
        gateway_port=port,
        instance_id=control.stack.instance_id,
    )
    extra.processes = {
        "gateway": replace(
            first,
            env={**first.env, **LOW_LIMITS, "GATEWAY_PORT": str(port), "METRICS_PORT": "0"},
            port=port,
            process=None,
        )
    }
    assert isinstance(extra.processes["gateway"], ProcessSpec)
    extra.start_process("gateway")
    try:
        yield f"http://127.0.0.1:{port}/v2"
    finally:
        extra.stop_process("gateway")


@pytest.fixture
async def low(second_gateway: str, api: Api) -> AsyncIterator[Api]:
    async with ClientSession(timeout=ClientTimeout(total=15)) as session:
        yield Api(session, second_gateway, api.static_key)


async def test_a_logout_through_one_gateway_is_refused_by_the_other_at_once(
    api: Api, low: Api, cast: Cast
) -> None:
    path = f"/user/{cast.ann.username}"
    assert (await as_(low, cast.ann.token, "GET", path, JSON)).status == 200
    assert (await api.call("GET", "/user/logout", api_key=cast.ann.token)).status == 200
    # The very next request, through the other gateway: no window at all, however loaded the
    # machine (a bound in milliseconds would time this machine, not the product).
    refused = await as_(low, cast.ann.token, "GET", path, JSON)
    assert (refused.status, refused.error_message()) == (401, "the session has ended; log in again")


async def statuses_of(replies: list[Reply]) -> list[tuple[int, str]]:
    return [(reply.status, reply.error_message() if reply.status >= 400 else "") for reply in replies]


TOO_MANY = "too many requests; retry after 1 s"


async def test_every_session_of_a_customer_spends_one_budget(low: Api, api: Api, cast: Cast) -> None:
    sessions = [await login(api, cast.bob.username) for _ in range(BURST + 3)]  # through the roomy one
    path = f"/user/{cast.bob.username}"
    # At once, so the bucket (1 a second) cannot refill in between: one burst for all sessions.
    replies = await asyncio.gather(*(as_(low, token, "GET", path, JSON) for token in sessions))
    statuses = await statuses_of(list(replies))
    assert statuses.count((200, "")) <= BURST + 1  # each session its own budget would be all 200
    assert statuses.count((429, TOO_MANY)) >= 2
    await asyncio.sleep(BURST)


async def test_a_logged_out_token_spends_its_address_budget(low: Api, api: Api, unique: str) -> None:
    stale: Customer = await sign_up(api, unique, "stale")
    assert (await api.call("GET", "/user/logout", api_key=stale.token)).status == 200
    replies = await asyncio.gather(
        *(as_(low, stale.token, "GET", "/store/inventory", JSON) for _ in range(BURST + 2)),
    )
    assert (await statuses_of(list(replies))).count((429, TOO_MANY)) >= 1
    assert (await as_(low, None, "GET", "/store/inventory", JSON)).status == 429  # the address's, spent
    await asyncio.sleep(BURST)  # the address's bucket refills (1 a second) for the tests after


async def test_logins_and_sign_ups_are_limited_per_address(low: Api, api: Api, unique: str) -> None:
    names = [(await sign_up(api, unique, f"n{n}")).username for n in range(3)]
    replies = [
        await low.call("GET", "/user/login", params={"username": name, "password": "not it at all"})
        for name in names  # one guess at each of many usernames
    ]
    too_many_logins = "too many login attempts from this address; retry after 30 s"
    assert await statuses_of(replies) == [
        (400, "invalid username/password supplied"),
        (400, "invalid username/password supplied"),
        (429, too_many_logins),
    ]
    await asyncio.sleep(3)  # the per-request budget refills: only the sign-up limit may refuse
    sign_ups = [await low.send("POST", "/user", a_user(f"{unique}s{n}"), JSON, key=False) for n in range(3)]
    assert [reply.status for reply in sign_ups] == [200, 200, 429]
    assert sign_ups[2].error_message() == "too many sign-ups from this address; retry after 1800 s"
    await asyncio.sleep(BURST)
