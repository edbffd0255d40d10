from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from petstore_gateway.credentials import bearer_token, credentials_in
from petstore_gateway.errors import ApiError
from petstore_gateway.settings import GatewaySettings

from .backend import Backend
from .conftest import STATIC_KEY, Client, serve_gateway
from .routes.test_user import login
from .wire import Wire, error_of

CONFLICT = "api_key and Authorization: Bearer name different credentials: send one of them, or the same"


@pytest.mark.parametrize(
    ("authorization", "expected"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER   abc  ", "abc"),
        ("Bearer", ""),
        ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", None),
        ("abc", None),
        ("", None),
    ],
)
def test_bearer_tokens_are_read_from_the_bearer_scheme_only(authorization: str, expected: str | None) -> None:
    assert bearer_token(authorization) == expected


@pytest.mark.parametrize(
    ("api_keys", "authorizations", "expected"),
    [
        ([], [], ""),
        (["k"], [], "k"),
        ([], ["Bearer k"], "k"),
        (["k"], ["Bearer k"], "k"),
        (["k", "k"], ["Bearer k"], "k"),
        ([""], ["Bearer k"], "k"),
        (["k"], ["Basic dTpw"], "k"),
        ([], ["Basic dTpw"], ""),
    ],
)
def test_one_credential_from_either_header(
    api_keys: list[str], authorizations: list[str], expected: str
) -> None:
    assert credentials_in(api_keys, authorizations) == expected


@pytest.mark.parametrize(
    ("api_keys", "authorizations"),
    [(["k"], ["Bearer other"]), (["k", "other"], []), ([], ["Bearer k", "Bearer other"])],
)
def test_two_different_credentials_are_400(api_keys: list[str], authorizations: list[str]) -> None:
    with pytest.raises(ApiError) as caught:
        credentials_in(api_keys, authorizations)
    assert (caught.value.status, caught.value.message) == (400, CONFLICT)


# ---------------------------------------------------------------------------------------
# Through the application: Bearer works wherever api_key does


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])
async def test_a_static_key_as_bearer_may_write(client: Client, backend: Backend, scheme: str) -> None:
    await backend.add_pet(1, "rex")
    response = await client.delete("/v2/pet/1", headers={"Authorization": f"{scheme} {STATIC_KEY}"})
    assert response.status == 200
    assert await backend.pet_ids() == []


@pytest.mark.parametrize("wire", list(Wire))
@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Authorization": "Bearer wrong"}, (401, "invalid api_key")),
        (
            {"Authorization": "Bearer "},
            (401, "api_key header (or Authorization: Bearer) is required for this operation"),
        ),
        (
            {"Authorization": "Basic dTpw"},
            (401, "api_key header (or Authorization: Bearer) is required for this operation"),
        ),
        ({"Authorization": f"Bearer {STATIC_KEY}", "api_key": "another-key"}, (400, CONFLICT)),
    ],
)
async def test_bearer_gets_the_errors_api_key_gets(
    client: Client, backend: Backend, wire: Wire, headers: dict[str, str], expected: tuple[int, str]
) -> None:
    await backend.add_pet(1, "rex")
    response = await client.delete("/v2/pet/1", headers={**headers, "Accept": wire.value})
    assert await error_of(wire, response) == expected
    assert 1 in await backend.pet_ids()


async def test_the_same_credential_in_both_headers_is_fine(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "rex")
    headers = {"api_key": STATIC_KEY, "Authorization": f"Bearer {STATIC_KEY}"}
    assert (await client.delete("/v2/pet/1", headers=headers)).status == 200


@pytest.mark.parametrize("path", ["/v2/pet/1", "/v2/user/logout", "/v2/user/login?username=a&password=b"])
async def test_different_credentials_are_400_on_open_operations_too(
    client: Client, backend: Backend, path: str
) -> None:
    await backend.add_pet(1, "rex")
    response = await client.get(path, headers={"api_key": STATIC_KEY, "Authorization": "Bearer other"})
    assert await error_of(Wire.JSON, response) == (400, CONFLICT)


async def test_probes_ignore_credentials(client: Client) -> None:
    headers = {"api_key": STATIC_KEY, "Authorization": "Bearer other"}
    for path in ("/livez", "/readyz"):
        assert (await client.get(path, headers=headers)).status == 200


async def test_a_session_as_bearer_may_write_and_logout_with_bearer_ends_it(
    client: Client, backend: Backend
) -> None:
    await backend.add_user("ann", 1)
    bearer = {"Authorization": f"Bearer {await login(client, 'ann')}"}
    assert (await client.delete("/v2/store/order/1", headers=bearer)).status == 404  # authenticated
    response = await client.get("/v2/user/logout", headers=bearer)
    assert (await response.json())["message"] == "ok"
    assert not await backend.session_active(bearer["Authorization"].removeprefix("Bearer "))
    after = await client.delete("/v2/store/order/1", headers=bearer)
    assert await error_of(Wire.JSON, after) == (401, "the session has ended; log in again")


async def test_a_session_as_bearer_is_its_user(client: Client, backend: Backend) -> None:
    """The session decides who may change a user, whichever header carries it."""
    await backend.add_user("ann", 1)
    await backend.add_user("bob", 2)
    bearer = {"Authorization": f"Bearer {await login(client, 'ann')}"}
    assert (await client.delete("/v2/user/bob", headers=bearer)).status == 403
    assert (await client.delete("/v2/user/ann", headers=bearer)).status == 200


@pytest.fixture
async def limited(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    clients = backend.clients()
    async for served in serve_gateway(
        replace(settings, rate_limit_per_second=1, rate_limit_burst=2), clients
    ):
        yield served


async def test_a_credential_spends_one_bucket_whichever_header_carries_it(limited: Client) -> None:
    assert (await limited.get("/v2/pet/abc", headers={"api_key": STATIC_KEY})).status == 400
    assert (await limited.get("/v2/pet/abc", headers={"Authorization": f"Bearer {STATIC_KEY}"})).status == 400
    response = await limited.get("/v2/pet/abc", headers={"api_key": STATIC_KEY})
    assert response.status == 429
    # The address's own bucket is untouched: the key's requests were not counted there.
    assert (await limited.get("/v2/pet/abc")).status == 400
