"""Caching and security headers, from the side of whoever must not get an answer meant for
somebody else: a shared cache, a sniffing browser, a framing page, a version scanner."""

from __future__ import annotations

import asyncio
import re

import pytest
from aiohttp import ClientResponse

from petstore_gateway.apidoc.routes import DOCS_PAGE

from .backend import Backend
from .conftest import STATIC_KEY, Client
from .routes.test_user import login

KEY = {"api_key": STATIC_KEY}


def _vary(response: ClientResponse) -> set[str]:
    return {field.strip().lower() for field in response.headers.get("Vary", "").split(",") if field.strip()}


def assert_private(response: ClientResponse) -> None:
    """Kept by no cache, and said to turn on the credential headers."""
    assert response.headers["Cache-Control"] == "no-store"
    assert {"api_key", "authorization", "accept"} <= _vary(response)


async def _customer(client: Client, backend: Backend) -> dict[str, str]:
    await backend.add_user("ann", 7)
    return {"api_key": await login(client, "ann")}


async def test_a_customers_order_and_order_list_are_never_stored(client: Client, backend: Backend) -> None:
    ann = await _customer(client, backend)
    await backend.add_pet(9, "Rex")
    placed = await client.post("/v2/store/order", json={"petId": 9, "quantity": 1}, headers=ann)
    assert placed.status == 200
    assert_private(placed)
    order_id = (await placed.json())["id"]
    for path in (f"/v2/store/order/{order_id}", "/v2/store/order"):
        for method in ("GET", "HEAD"):
            response = await client.request(method, path, headers=ann)
            assert response.status == 200, (method, path)
            assert_private(response)


async def test_a_staff_read_of_an_order_is_never_stored(client: Client, backend: Backend) -> None:
    await backend.add_pet(9, "Rex")
    await backend.add_order(9, order_id=4)
    response = await client.get("/v2/store/order/4", headers=KEY)
    assert response.status == 200
    assert_private(response)


async def test_login_and_logout_answers_are_never_stored(client: Client, backend: Backend) -> None:
    await backend.add_user("ann", 7)
    response = await client.get(
        "/v2/user/login", params={"username": "ann", "password": "correct-horse-battery"}
    )
    assert response.status == 200
    assert "session:" in (await response.json())["message"]
    assert response.headers["Cache-Control"] == "no-store"
    token = (await response.json())["message"].removeprefix("logged in user session:")
    logout = await client.get("/v2/user/logout", headers={"api_key": token})
    assert logout.status == 200
    assert logout.headers["Cache-Control"] == "no-store"


async def test_a_user_record_is_never_stored_whoever_asks(client: Client, backend: Backend) -> None:
    ann = await _customer(client, backend)
    for headers in (ann, KEY, {}):  # the whole record, the staff view, the public view
        response = await client.get("/v2/user/ann", headers=headers)
        assert response.status == 200
        assert_private(response)


async def test_an_idempotent_replay_is_never_stored(client: Client) -> None:
    for _ in range(2):  # the second is the replay
        replayed = await client.post(
            "/v2/pet", json={"name": "Rex", "photoUrls": []}, headers={**KEY, "Idempotency-Key": "k-1"}
        )
    assert replayed.status == 200
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert_private(replayed)


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("GET", "/v2/store/order/4", {}, 401),  # no credential
        ("DELETE", "/v2/pet/1", {"api_key": "made-up"}, 401),  # a wrong one
        ("GET", "/v2/pet/1", {"api_key": STATIC_KEY, "Authorization": "Bearer other"}, 400),  # two
        ("GET", "/v2/pet/99", {}, 404),
        ("GET", "/v2/nowhere", {}, 404),
    ],
)
async def test_errors_are_never_stored(
    client: Client, method: str, path: str, headers: dict[str, str], status: int
) -> None:
    response = await client.request(method, path, headers=headers)
    assert response.status == status
    assert_private(response)


async def test_the_catalogue_keeps_its_etags_and_may_be_cached(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "Rex")
    response = await client.get("/v2/pet/1", headers=KEY)  # a credential sent to an open read is not read
    assert response.status == 200
    assert "ETag" in response.headers
    assert "Cache-Control" not in response.headers
    assert _vary(response) == {"accept"}
    again = await client.get("/v2/pet/1", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status == 304
    assert "Cache-Control" not in again.headers


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v2/pet/1", 200),
        ("/v2/pet/x", 400),
        ("/v2/nowhere", 404),
        ("/livez", 200),
        ("/v2/docs", 200),
        ("/v2/docs/swagger-ui-bundle.js", 200),
        ("/v2/docs/", 302),
    ],
)
async def test_every_answer_says_nosniff_and_no_version(
    client: Client, backend: Backend, path: str, status: int
) -> None:
    await backend.add_pet(1, "Rex")
    response = await client.get(path, allow_redirects=False)
    assert response.status == status
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Server"] == "petstore"


async def test_aiohttps_own_answer_to_an_unparseable_request_names_no_version(client: Client) -> None:
    assert client.server.port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", client.server.port)
    writer.write(b"GET /v2/pet/1 HTTP/1.1\r\nHost: test\r\nBad Header\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    await writer.wait_closed()
    head = answer.partition(b"\r\n\r\n")[0].decode("latin-1")
    assert head.split()[1] == "400"
    assert re.search(r"^Server: petstore$", head, re.MULTILINE | re.IGNORECASE), head


async def test_the_docs_page_runs_no_inline_script_and_cannot_be_framed(client: Client) -> None:
    response = await client.get("/v2/docs")
    assert response.status == 200
    policy = {
        directive.split()[0]: directive.split()[1:]
        for directive in response.headers["Content-Security-Policy"].split(";")
        if directive.strip()
    }
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval', no hosts
    assert policy["default-src"] == ["'none'"]
    page = await response.text()
    assert page == DOCS_PAGE
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", page, re.DOTALL)
    assert scripts
    assert all('src="' in attributes and not body.strip() for attributes, body in scripts)
    assert not re.search(r"\son[a-z]+=", page)  # no inline event handlers either
