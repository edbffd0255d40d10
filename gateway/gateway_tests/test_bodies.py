"""Bodies without a Content-Type are read as JSON; a declared type we do not read stays 415."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .backend import Backend
from .conftest import STATIC_KEY, Client
from .wire import Wire, error_of

KEY = {"api_key": STATIC_KEY}
USER = {"username": "ann", "email": "ann@example.com", "password": "pass-word-1"}
NOT_JSON = (
    "request body is not valid JSON; a body without Content-Type is read as JSON "
    "(declare application/xml for XML)"
)


async def post_undeclared(
    client: Client, path: str, body: bytes, headers: dict[str, str] | None = None
) -> Any:
    """POST `body` with no Content-Type at all (aiohttp would otherwise add one)."""
    response = await client.post(path, data=body, headers=headers, skip_auto_headers=("Content-Type",))
    assert "Content-Type" not in response.request_info.headers
    return response


@pytest.mark.parametrize(
    ("path", "body", "headers"),
    [
        ("/v2/user", USER, {}),
        ("/v2/user/createWithList", [{**USER, "username": "bob"}], KEY),
        ("/v2/user/createWithArray", [{**USER, "username": "cy"}], KEY),
        ("/v2/pet", {"name": "rex", "photoUrls": []}, KEY),
    ],
)
async def test_a_json_body_without_content_type_is_read_as_json(
    client: Client, path: str, body: Any, headers: dict[str, str]
) -> None:
    response = await post_undeclared(client, path, json.dumps(body).encode(), headers)
    assert response.status == 200, await response.text()


async def test_an_order_and_a_user_update_without_content_type(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "rex")
    response = await post_undeclared(client, "/v2/store/order", b'{"petId": 1}', KEY)
    assert response.status == 200
    assert (await response.json())["petId"] == 1
    await post_undeclared(client, "/v2/user", json.dumps(USER).encode())
    response = await client.put(
        "/v2/user/ann", data=b'{"firstName": "Ann"}', headers=KEY, skip_auto_headers=("Content-Type",)
    )
    assert response.status == 200
    assert (await backend.user("ann")).first_name == "Ann"


@pytest.mark.parametrize("wire", list(Wire))
@pytest.mark.parametrize("body", [b"{not json", b"<User><username>ann</username></User>", b"\xff\xfe"])
async def test_a_body_without_content_type_that_is_not_json_is_400_naming_it(
    client: Client, backend: Backend, wire: Wire, body: bytes
) -> None:
    response = await post_undeclared(client, "/v2/user", body, {"Accept": wire.value})
    assert await error_of(wire, response) == (400, NOT_JSON)
    assert await backend.find_user("ann") is None


async def test_an_empty_content_type_counts_as_none(client: Client) -> None:
    response = await client.post("/v2/user", data=json.dumps(USER).encode(), headers={"Content-Type": ""})
    assert response.status == 200


@pytest.mark.parametrize("content_type", ["text/plain", "application/octet-stream", "application/yaml"])
async def test_a_declared_type_we_do_not_read_stays_415(client: Client, content_type: str) -> None:
    response = await client.post(
        "/v2/user", data=json.dumps(USER).encode(), headers={"Content-Type": content_type}
    )
    assert await error_of(Wire.JSON, response) == (
        415,
        "unsupported Content-Type: use application/json or application/xml",
    )


async def test_a_form_without_content_type_stays_415(client: Client, backend: Backend) -> None:
    """Forms are not JSON: the form operations still need their declared type."""
    await backend.add_pet(1, "rex")
    response = await post_undeclared(client, "/v2/pet/1", b"name=max", KEY)
    assert (await error_of(Wire.JSON, response))[0] == 415
    assert (await backend.pet(1)).name == "rex"
