from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from petstore.user.v1 import user_service_pb2
from petstore_common import callers
from petstore_gateway.client_address import parse_networks
from petstore_gateway.settings import GatewaySettings

from ..backend import PASSWORD, Backend
from ..conftest import STATIC_KEY, Client, serve_gateway, unused_address
from ..tokens import issue_token
from ..wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
FREE_FAILURES = 5
"""The user service's free wrong passwords per account and source (its login_throttle)."""
WIRES = pytest.mark.parametrize("wire", list(Wire))
ANN = {
    "username": "ann",
    "firstName": "Ann",
    "lastName": "Lee",
    "email": "ann@example.com",
    "password": PASSWORD,
    "phone": "555",
    "userStatus": 1,
}


async def login(client: Client, username: str, password: str = PASSWORD) -> str:
    response = await client.get("/v2/user/login", params={"username": username, "password": password})
    assert response.status == 200
    message: str = (await response.json())["message"]
    return message.removeprefix("logged in user session:")


@WIRES
async def test_create_user_needs_no_key(client: Client, backend: Backend, wire: Wire) -> None:
    response = await client.post("/v2/user", data=wire.body("User", ANN), headers=wire.headers())
    assert response.status == 200
    body = await wire.read(response)
    stored = await backend.user("ann")
    assert body == {"code": 200, "type": "unknown", "message": str(stored.id)}
    assert (stored.first_name, stored.phone) == ("Ann", "555")
    assert stored.user_status == 0  # staff's to set: a sign-up starts at 0
    assert await backend.login("ann", PASSWORD)


@WIRES
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"email": None}, (400, "email is required")),
        ({"password": None}, (400, "password is required")),
        ({"username": None}, (400, "username is required")),
        ({"email": "nope"}, (400, "email: must look like an email")),
        ({"userStatus": "x"}, (400, "userStatus must be an integer")),
    ],
)
async def test_create_user_invalid_is_400(
    client: Client, wire: Wire, change: dict[str, Any], expected: tuple[int, str]
) -> None:
    user = {key: value for key, value in {**ANN, **change}.items() if value is not None}
    response = await client.post("/v2/user", data=wire.body("User", user), headers=wire.headers())
    assert await error_of(wire, response) == expected


@WIRES
async def test_create_user_with_a_taken_username_is_409(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_user("ann", 1)
    response = await client.post("/v2/user", data=wire.body("User", ANN), headers=wire.headers())
    assert await error_of(wire, response) == (409, "username ann is taken")


@WIRES
async def test_create_user_unparseable_is_400(client: Client, wire: Wire) -> None:
    response = await client.post("/v2/user", data=b"{<", headers=wire.headers())
    assert (await error_of(wire, response))[0] == 400


@WIRES
@pytest.mark.parametrize("path", ["/v2/user/createWithArray", "/v2/user/createWithList"])
async def test_create_users(client: Client, backend: Backend, wire: Wire, path: str) -> None:
    users = [ANN, {**ANN, "username": "bob", "email": "bob@example.com"}]
    response = await client.post(path, data=wire.body("users", users), headers=wire.headers(**KEY))
    assert response.status == 200
    assert await wire.read(response) == {"code": 200, "type": "unknown", "message": "ok"}
    assert [(await backend.user(name)).username for name in ("ann", "bob")] == ["ann", "bob"]


@WIRES
@pytest.mark.parametrize(
    ("users", "message"),
    [
        ([ANN, {**ANN, "email": None}], "users[1].email is required"),
        ([ANN, {**ANN, "email": "x"}], "users[1].email: must be at least 3 characters"),
        ([ANN, ANN], "users[1]: duplicate username"),
        ([], "at least one user is required"),
    ],
)
async def test_create_users_all_or_none(
    client: Client, backend: Backend, wire: Wire, users: list[dict[str, Any]], message: str
) -> None:
    users = [{key: value for key, value in user.items() if value is not None} for user in users]
    response = await client.post(
        "/v2/user/createWithList", data=wire.body("users", users), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, response) == (400, message)
    assert await backend.find_user("ann") is None


async def test_create_users_json_must_be_a_list(client: Client) -> None:
    response = await client.post("/v2/user/createWithArray", json=ANN, headers=KEY)
    assert await error_of(Wire.JSON, response) == (400, "the request body must be a list")


@WIRES
async def test_login(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_user("ann", 1)
    response = await client.get(
        "/v2/user/login", params={"username": "ann", "password": PASSWORD}, headers={"Accept": wire.value}
    )
    assert response.status == 200
    body = await wire.read(response)
    assert (body["code"], body["type"]) == (200, "unknown")
    assert body["message"].startswith("logged in user session:")
    assert response.headers["X-Rate-Limit"] == "600"  # LOGIN_RATE_LIMIT_PER_MINUTE 10, per hour
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", response.headers["X-Expires-After"])


@WIRES
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"username": "ann", "password": "wrong"}, (400, "invalid username/password supplied")),
        ({"username": "zed", "password": "pw"}, (404, "user zed not found")),
        ({"username": "ann"}, (400, "password is required")),
        ({"password": "pw"}, (400, "username is required")),
    ],
)
async def test_login_errors(
    client: Client, backend: Backend, wire: Wire, params: dict[str, str], expected: tuple[int, str]
) -> None:
    await backend.add_user("ann", 1)
    response = await client.get("/v2/user/login", params=params, headers={"Accept": wire.value})
    assert await error_of(wire, response) == expected


async def test_a_session_works_as_api_key_and_is_checked_once_per_request(
    client: Client, backend: Backend
) -> None:
    await backend.add_user("ann", 1)
    token = await login(client, "ann")
    backend.calls.clear()
    for _ in range(3):
        response = await client.delete("/v2/store/order/1", headers={"api_key": token})
        assert response.status == 404  # authenticated; the order just does not exist
    # The rate limit and the access check share one answer.
    assert backend.calls.count("UserService/CheckSession") == 3


async def test_a_session_ended_elsewhere_is_refused_on_the_next_request(
    client: Client, backend: Backend
) -> None:
    await backend.add_user("ann", 1)
    token = await login(client, "ann")
    assert (await client.delete("/v2/store/order/1", headers={"api_key": token})).status == 404

    await backend.logout(token)  # through another gateway (or a password change, or a deletion)

    assert (await client.delete("/v2/store/order/1", headers={"api_key": token})).status == 401
    calls = backend.calls.count("UserService/CheckSession")
    assert (await client.delete("/v2/store/order/1", headers={"api_key": token})).status == 401
    # An ended session is remembered: no more calls.
    assert backend.calls.count("UserService/CheckSession") == calls


@WIRES
async def test_logout_ends_the_session_at_once(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_user("ann", 1)
    token = await login(client, "ann")
    assert (await client.delete("/v2/store/order/1", headers={"api_key": token})).status == 404
    response = await client.get("/v2/user/logout", headers={"api_key": token, "Accept": wire.value})
    assert response.status == 200
    assert await wire.read(response) == {"code": 200, "type": "unknown", "message": "ok"}
    assert not await backend.session_active(token)
    after = await client.delete("/v2/store/order/1", headers={"api_key": token, "Accept": wire.value})
    assert (await error_of(wire, after))[0] == 401


@pytest.mark.parametrize("headers", [{}, {"api_key": "garbage"}, {"api_key": "a.b.c"}, KEY])
async def test_logout_without_a_session_is_ok(client: Client, headers: dict[str, str]) -> None:
    response = await client.get("/v2/user/logout", headers=headers)
    assert response.status == 200
    assert (await response.json())["message"] == "ok"


@WIRES
async def test_get_user_never_returns_the_password(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_user("ann", 1)
    response = await client.get("/v2/user/ann", headers={"Accept": wire.value})
    assert response.status == 200
    assert PASSWORD not in await response.text()
    body = await wire.read(response)
    assert body["username"] == "ann"
    assert body["id"] == 1
    assert "password" not in body


@WIRES
async def test_get_unknown_user_is_404(client: Client, wire: Wire) -> None:
    response = await client.get("/v2/user/zed", headers={"Accept": wire.value})
    assert await error_of(wire, response) == (404, "user zed not found")


@WIRES
async def test_update_own_user(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_user("ann", 1)
    token = await login(client, "ann")
    change = {"firstName": "Annie", "email": "annie@example.com", "password": "new-password"}
    response = await client.put(
        "/v2/user/ann", data=wire.body("User", change), headers=wire.headers(api_key=token)
    )
    assert response.status == 200
    assert await wire.read(response) == {"code": 200, "type": "unknown", "message": "1"}
    stored = await backend.user("ann")  # no username in the body: the name stays
    assert (stored.first_name, stored.email) == ("Annie", "annie@example.com")
    assert await backend.login("ann", "new-password")


@WIRES
async def test_update_someone_else_is_403_but_a_static_key_may(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await backend.add_user("ann", 1)
    await backend.add_user("bob", 2)
    bob = await login(client, "bob")
    body = wire.body("User", {"firstName": "Hacked"})
    denied = await client.put("/v2/user/ann", data=body, headers=wire.headers(api_key=bob))
    assert await error_of(wire, denied) == (403, "only staff or the user itself may change this user")
    allowed = await client.put("/v2/user/ann", data=body, headers=wire.headers(**KEY))
    assert allowed.status == 200
    assert (await backend.user("ann")).first_name == "Hacked"


@WIRES
async def test_update_user_errors(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_user("ann", 1)
    await backend.add_user("bob", 2)
    rename = await client.put(
        "/v2/user/ann", data=wire.body("User", {"username": "bob"}), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, rename) == (409, "username bob is taken")
    unknown_named = await client.put(
        "/v2/user/zed", data=wire.body("User", {"firstName": "Z"}), headers=wire.headers(**KEY)
    )
    assert await error_of(wire, unknown_named) == (404, "user zed not found")
    unparseable = await client.put("/v2/user/ann", data=b"<User", headers=wire.headers(**KEY))
    assert (await error_of(wire, unparseable))[0] == 400


@WIRES
async def test_delete_user(client: Client, backend: Backend, wire: Wire) -> None:
    await backend.add_user("ann", 1)
    await backend.add_user("bob", 2)
    bob = await login(client, "bob")
    denied = await client.delete("/v2/user/ann", headers={"api_key": bob, "Accept": wire.value})
    assert (await error_of(wire, denied))[0] == 403
    own = await client.delete("/v2/user/bob", headers={"api_key": bob, "Accept": wire.value})
    assert await wire.read(own) == {"code": 200, "type": "unknown", "message": "bob"}
    by_key = await client.delete("/v2/user/ann", headers={**KEY, "Accept": wire.value})
    assert by_key.status == 200
    gone = await client.delete("/v2/user/ann", headers={**KEY, "Accept": wire.value})
    assert await error_of(wire, gone) == (404, "user ann not found")
    assert [await backend.find_user(name) for name in ("ann", "bob")] == [None, None]


async def test_a_deleted_users_session_stops_working_at_once(client: Client, backend: Backend) -> None:
    await backend.add_user("bob", 2)
    bob = await login(client, "bob")
    assert (await client.delete("/v2/user/bob", headers={"api_key": bob})).status == 200
    # The gateway's session cache said "active" a moment ago; the delete must overrule it.
    again = await client.delete("/v2/user/bob", headers={"api_key": bob})
    assert again.status == 401


async def test_an_expired_or_forged_session_is_401(client: Client) -> None:
    expired, _ = issue_token(1, "ann", ttl_seconds=-5)
    forged, _ = issue_token(1, "ann", secret="not-the-secret-but-long-enough-000000")
    for token in (expired, forged):
        response = await client.delete("/v2/user/ann", headers={"api_key": token})
        assert response.status == 401


async def test_no_response_ever_carries_the_password(client: Client, backend: Backend) -> None:
    bodies = []
    for wire in Wire:
        if await backend.find_user("ann") is not None:
            await backend.delete_user("ann")
        bodies.append(await client.post("/v2/user", data=wire.body("User", ANN), headers=wire.headers()))
        bodies.append(await client.post("/v2/user", data=wire.body("User", ANN), headers=wire.headers()))
        bodies.append(await client.get("/v2/user/ann", headers={"Accept": wire.value}))
        bodies.append(
            await client.get("/v2/user/login", params={"username": "ann", "password": PASSWORD + "x"})
        )
        bodies.append(
            await client.put(
                "/v2/user/ann", data=wire.body("User", {**ANN, "email": "x"}), headers=wire.headers(**KEY)
            )
        )
    for response in bodies:
        text = await response.text()
        assert PASSWORD not in text
        assert "Traceback" not in text


async def test_a_session_cannot_be_checked_while_the_user_service_is_down(
    settings: GatewaySettings, backend: Backend
) -> None:
    clients = backend.clients(user_addr=unused_address())
    token, _ = issue_token(1, "ann")
    async for client in serve_gateway(settings, clients):
        response = await client.delete("/v2/store/order/1", headers={"api_key": token})
        assert await error_of(Wire.JSON, response) == (503, "the user service is unavailable")
        static = await client.delete("/v2/store/order/1", headers=KEY)
        assert static.status == 404  # static keys need no user service


@WIRES
async def test_anonymous_and_other_customers_see_only_id_and_username(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await backend.add_user("ann", 1)
    await backend.add_user("bob", 2)
    bob = await login(client, "bob")

    for headers in ({}, {"api_key": bob}):
        response = await client.get("/v2/user/ann", headers={**headers, "Accept": wire.value})
        assert response.status == 200
        assert await wire.read(response) == {"id": 1, "username": "ann"}
        assert "ann@example.com" not in await response.text()


@WIRES
async def test_the_user_itself_and_staff_see_the_whole_record(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await backend.add_user("ann", 1)
    ann = await login(client, "ann")

    for headers in (KEY, {"api_key": ann}):  # the user service shows all only to these
        response = await client.get("/v2/user/ann", headers={**headers, "Accept": wire.value})
        assert response.status == 200
        assert (await wire.read(response))["email"] == "ann@example.com"


@WIRES
async def test_a_bad_key_on_reading_a_user_is_401_not_anonymous(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await backend.add_user("ann", 1)
    response = await client.get("/v2/user/ann", headers={"api_key": "guessed", "Accept": wire.value})
    assert (await error_of(wire, response))[0] == 401


async def test_a_sign_up_tells_the_service_who_signs_up(client: Client, backend: Backend) -> None:
    """Only staff set an account's userStatus and id: anybody else's are ignored."""
    anonymous = await client.post("/v2/user", json={**ANN, "username": "new1", "id": 50})
    assert anonymous.status == 200
    stored = await backend.user("new1")
    assert (stored.user_status, stored.id) == (0, int((await anonymous.json())["message"]))
    assert stored.id != 50
    by_staff = await client.post("/v2/user", json={**ANN, "username": "new2", "id": 60}, headers=KEY)
    assert by_staff.status == 200
    stored = await backend.user("new2")
    assert (stored.user_status, stored.id) == (1, 60)


async def test_bulk_creation_by_a_customer_never_reaches_the_user_service(
    client: Client, backend: Backend
) -> None:
    await backend.add_user("ann", 1)
    ann = await login(client, "ann")
    backend.calls.clear()
    response = await client.post(
        "/v2/user/createWithList", json=[{**ANN, "username": "x1"}], headers={"api_key": ann}
    )
    assert response.status == 403
    assert "CreateUsers" not in backend.calls.to("UserService")
    assert await backend.find_user("x1") is None


async def add_versioned_user(backend: Backend, username: str, user_id: int, version: int) -> None:
    """An account changed by staff until it is at `version` (a new one is at 1)."""
    user = await backend.add_user(username, user_id)
    while user.version < version:
        user.first_name = f"change {user.version}"
        request = user_service_pb2.UpdateUserRequest(username=username, user=user, caller=callers.staff())
        user = (await backend.users.UpdateUser(request, timeout=5)).user


@WIRES
async def test_a_full_record_has_a_versioned_etag_per_format_and_revalidates(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await add_versioned_user(backend, "ann", 1, 4)
    response = await client.get("/v2/user/ann", headers={**KEY, "Accept": wire.value})
    etag = response.headers["ETag"]
    assert re.fullmatch(r'"4-[0-9a-f]{16}"', etag)

    again = await client.get("/v2/user/ann", headers={**KEY, "Accept": wire.value, "If-None-Match": etag})
    assert (again.status, await again.read(), again.headers["ETag"]) == (304, b"", etag)
    other_format = Wire.XML if wire is Wire.JSON else Wire.JSON
    other = await client.get(
        "/v2/user/ann", headers={**KEY, "Accept": other_format.value, "If-None-Match": etag}
    )
    assert other.status == 200
    assert other.headers["ETag"] != etag


async def test_the_public_view_etag_does_not_reveal_the_version(client: Client, backend: Backend) -> None:
    await add_versioned_user(backend, "ann", 1, 4)
    response = await client.get("/v2/user/ann")
    assert re.fullmatch(r'"p-[0-9a-f]{16}"', response.headers["ETag"])


@WIRES
async def test_an_update_under_a_stale_etag_is_412_and_changes_nothing(
    client: Client, backend: Backend, wire: Wire
) -> None:
    await add_versioned_user(backend, "ann", 1, 4)
    current = (await client.get("/v2/user/ann", headers={**KEY, "Accept": wire.value})).headers["ETag"]
    body = wire.body("User", {"firstName": "Annie"})

    updated = await client.put(
        "/v2/user/ann", data=body, headers=wire.headers(**KEY, **{"If-Match": current})
    )
    stale = await client.put("/v2/user/ann", data=body, headers=wire.headers(**KEY, **{"If-Match": current}))
    gone = await client.put("/v2/user/zed", data=body, headers=wire.headers(**KEY, **{"If-Match": "*"}))

    assert updated.status == 200
    assert await error_of(wire, stale) == (412, "user ann was changed since the version given (If-Match)")
    assert (await error_of(wire, gone))[0] == 412
    assert (await backend.user("ann")).version == 5


async def test_wrong_guesses_from_one_address_do_not_lock_out_the_owner_elsewhere(
    settings: GatewaySettings, backend: Backend
) -> None:
    """The gateway tells the service whose guess it is (here through a trusted proxy)."""
    await backend.add_user("ann", 1)
    behind_proxy = replace(settings, trusted_proxies=parse_networks(["127.0.0.0/8"]))
    guesser, owner = {"X-Forwarded-For": "203.0.113.7"}, {"X-Forwarded-For": "198.51.100.20"}
    async for client in serve_gateway(behind_proxy, backend.clients()):
        wrong = {"username": "ann", "password": "not her password"}
        for _ in range(FREE_FAILURES):
            response = await client.get("/v2/user/login", params=wrong, headers=guesser)
            assert response.status == 400
        refused = await client.get(
            "/v2/user/login", params={"username": "ann", "password": PASSWORD}, headers=guesser
        )
        assert refused.status == 429  # the guesser waits, even with the right password
        assert refused.headers["Retry-After"] == "1"

        response = await client.get(
            "/v2/user/login", params={"username": "ann", "password": PASSWORD}, headers=owner
        )
        assert response.status == 200, await response.text()


async def test_a_password_change_keeps_the_session_that_made_it(client: Client, backend: Backend) -> None:
    await backend.add_user("ann", 1)
    editor, other = await login(client, "ann"), await login(client, "ann")
    change = {"email": "ann@example.com", "password": "a brand new secret"}

    response = await client.put("/v2/user/ann", json=change, headers={"api_key": editor})

    assert response.status == 200, await response.text()
    assert await backend.session_active(editor)
    assert not await backend.session_active(other)
    assert (await client.delete("/v2/store/order/1", headers={"api_key": editor})).status == 404
    assert (await client.delete("/v2/store/order/1", headers={"api_key": other})).status == 401
