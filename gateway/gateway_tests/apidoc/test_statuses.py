"""Every status the gateway answers an operation with is one its description lists.

Each operation is driven through the real services (in this process) with a valid request and
with bad ones, and the status that comes back must be the expected one and a documented one,
in both documents.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc
import pytest

from petstore.pet.v1 import pet_service_pb2
from petstore_common import callers
from petstore_gateway.operations import API_PREFIX
from petstore_gateway.routes.pet import IMAGE_PATH
from petstore_gateway.settings import GatewaySettings

from ..backend import PASSWORD, Backend, running_backend, until
from ..conftest import STATIC_KEY, Client, serve_gateway
from ..faults import refusing_services
from ..images import PNG
from ..tokens import issue_token
from .described import both_documents, operations, statuses

KEY = {"api_key": STATIC_KEY}
PET = {"name": "Rex", "photoUrls": ["http://img/1.png"]}
NEW_USER = {"username": "cat", "email": "cat@example.com", "password": "pw-123456"}
WEBHOOK = {"url": "https://hooks.example.com/petstore", "eventTypes": ["order.placed"]}
BODY_TYPES = {"application/json", "application/xml"}
KIT_SESSION = "<a session of kit>"
BOB_SESSION = "<a session of bob>"
"""Stand for the sessions _seed opens: Call.send puts the real tokens in their place."""
IMAGE = "<image id>"
"""Stands in a URL for the id of the image _seed uploads."""
IMAGE_ROUTE = API_PREFIX + IMAGE_PATH
AS_KIT = {"api_key": KIT_SESSION}
"""A customer: refused wherever only staff may act."""


@dataclass(frozen=True)
class Seeded:
    """What _seed made that a request names: the sessions' tokens and the image's id."""

    sessions: dict[str, str]
    image_id: str


@dataclass(frozen=True)
class Call:
    """One request: `kwargs` is made afresh for every send (a FormData is single-use)."""

    method: str
    route: str
    url: str
    kwargs: Callable[[], dict[str, Any]] = field(default=dict)

    async def send(
        self, client: Client, seeded: Seeded | None = None, **changes: Any
    ) -> aiohttp.ClientResponse:
        kwargs = {**self.kwargs(), **changes}
        url = self.url
        if seeded is not None:
            url = url.replace(IMAGE, seeded.image_id)
            headers = kwargs.get("headers") or {}
            kwargs["headers"] = {name: seeded.sessions.get(value, value) for name, value in headers.items()}
        return await client.request(self.method, url, **kwargs)


def _upload(data: bytes = PNG) -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("file", io.BytesIO(data), filename="p.png", content_type="image/png")
    return form


VALID = [
    Call("POST", "/v2/pet", "/v2/pet", lambda: {"json": PET, "headers": KEY}),
    Call("PUT", "/v2/pet", "/v2/pet", lambda: {"json": {**PET, "id": 1}, "headers": KEY}),
    Call("GET", "/v2/pet/findByStatus", "/v2/pet/findByStatus", lambda: {"params": {"status": "available"}}),
    Call("GET", "/v2/pet/findByTags", "/v2/pet/findByTags", lambda: {"params": {"tags": "cute"}}),
    Call("GET", "/v2/pet/{petId}", "/v2/pet/1"),
    Call("POST", "/v2/pet/{petId}", "/v2/pet/1", lambda: {"data": {"name": "Max"}, "headers": KEY}),
    Call("DELETE", "/v2/pet/{petId}", "/v2/pet/1", lambda: {"headers": KEY}),
    Call(
        "POST",
        "/v2/pet/{petId}/uploadImage",
        "/v2/pet/1/uploadImage",
        lambda: {"data": _upload(), "headers": KEY},
    ),
    Call("GET", "/v2/pet/{petId}/images/{imageId}", "/v2/pet/1/images/" + IMAGE),
    Call("GET", "/v2/store/inventory", "/v2/store/inventory"),
    Call("POST", "/v2/store/order", "/v2/store/order", lambda: {"json": {"petId": 1}, "headers": KEY}),
    Call("GET", "/v2/store/order", "/v2/store/order", lambda: {"headers": KEY}),
    Call("GET", "/v2/store/order/{orderId}", "/v2/store/order/1", lambda: {"headers": KEY}),
    Call("DELETE", "/v2/store/order/{orderId}", "/v2/store/order/1", lambda: {"headers": KEY}),
    Call(
        "PUT",
        "/v2/store/order/{orderId}",
        "/v2/store/order/1",
        lambda: {"json": {"status": "approved"}, "headers": KEY},
    ),
    Call("POST", "/v2/user", "/v2/user", lambda: {"json": NEW_USER}),
    Call(
        "POST",
        "/v2/user/createWithArray",
        "/v2/user/createWithArray",
        lambda: {"json": [NEW_USER], "headers": KEY},
    ),
    Call(
        "POST",
        "/v2/user/createWithList",
        "/v2/user/createWithList",
        lambda: {"json": [NEW_USER], "headers": KEY},
    ),
    Call(
        "GET",
        "/v2/user/login",
        "/v2/user/login",
        lambda: {"params": {"username": "ann", "password": PASSWORD}},
    ),
    Call("GET", "/v2/user/logout", "/v2/user/logout", lambda: {"headers": {"api_key": KIT_SESSION}}),
    Call("GET", "/v2/user/{username}", "/v2/user/ann"),
    Call(
        "PUT",
        "/v2/user/{username}",
        "/v2/user/ann",
        lambda: {"json": {"username": "ann", "email": "a@example.com"}, "headers": KEY},
    ),
    Call("DELETE", "/v2/user/{username}", "/v2/user/ann", lambda: {"headers": KEY}),
    Call("POST", "/v2/webhooks", "/v2/webhooks", lambda: {"json": WEBHOOK, "headers": KEY}),
    Call("GET", "/v2/webhooks", "/v2/webhooks", lambda: {"headers": KEY}),
    Call("DELETE", "/v2/webhooks/{webhookId}", "/v2/webhooks/1", lambda: {"headers": KEY}),
    Call(
        "GET",
        "/v2/webhooks/{webhookId}/deliveries",
        "/v2/webhooks/1/deliveries",
        lambda: {"params": {"limit": "5"}, "headers": KEY},
    ),
]
CALLS = {(call.method, call.route): call for call in VALID}


async def _seed(backend: Backend) -> Seeded:
    """Pet 1 with an image, pet 2 held by order 1 (placed), users ann (1), bob (2) and kit (3),
    open sessions of bob and kit, and webhook endpoint 1; nothing else (the backend is a fresh
    one)."""
    await backend.add_pet(1, "Rex", tags=("cute",))
    upload = pet_service_pb2.UploadPetImageRequest(pet_id=1, data=PNG, caller=callers.staff())
    image = await backend.pets.UploadPetImage(upload, timeout=5)
    await backend.add_pet(2, "Max")
    await backend.add_order(2, order_id=1)
    for user_id, name in ((1, "ann"), (2, "bob"), (3, "kit")):
        await backend.add_user(name, user_id)
    sessions = {KIT_SESSION: await backend.login("kit"), BOB_SESSION: await backend.login("bob")}
    backend.webhooks.add()
    return Seeded(sessions, image.image_id)


@asynccontextmanager
async def seeded_gateway(settings: GatewaySettings) -> AsyncIterator[tuple[Client, Seeded]]:
    """A gateway in front of freshly seeded services, for a call that changes what it finds."""
    async with running_backend() as backend:
        seeded = await _seed(backend)
        async for client in serve_gateway(settings, backend.clients()):
            yield client, seeded


def _assert_documented(documents: dict[str, dict[str, Any]], call: Call, status: int) -> None:
    for name, document in documents.items():
        assert status in statuses(document, call.method, call.route), (name, call.method, call.route, status)


async def test_the_calls_cover_every_described_operation(documents: dict[str, dict[str, Any]]) -> None:
    assert set(CALLS) == set(operations(documents["swagger"]))


async def test_valid_calls_succeed(settings: GatewaySettings) -> None:
    for call in VALID:
        async with seeded_gateway(settings) as (client, seeded):
            response = await call.send(client, seeded)
            assert response.status == 200, (call.route, await response.text())


async def test_without_an_api_key_secured_operations_are_401(
    client: Client, backend: Backend, documents: dict[str, dict[str, Any]]
) -> None:
    seeded = await _seed(backend)
    secured = [
        call
        for call in VALID
        if operations(documents["swagger"])[(call.method, call.route)].get("security")
        == [{"api_key": []}, {"bearer": []}]
    ]
    assert len(secured) == 18
    for call in secured:
        headers = {k: v for k, v in call.kwargs().get("headers", {}).items() if k != "api_key"}
        response = await call.send(client, seeded, headers=headers)
        assert response.status == 401, call.route
        _assert_documented(documents, call, 401)


async def test_every_call_takes_its_credential_as_bearer_too(settings: GatewaySettings) -> None:
    moved = 0
    for call in VALID:
        async with seeded_gateway(settings) as (client, seeded):
            headers = {
                name: seeded.sessions.get(value, value)
                for name, value in call.kwargs().get("headers", {}).items()
            }
            if "api_key" in headers:
                headers["Authorization"] = f"Bearer {headers.pop('api_key')}"
                moved += 1
            response = await call.send(client, seeded, headers=headers)
            assert response.status == 200, (call.route, await response.text())
    assert moved == 19  # the eighteen operations that need a key, and logout


async def test_credentials_that_disagree_are_400_everywhere(
    client: Client, backend: Backend, documents: dict[str, dict[str, Any]]
) -> None:
    seeded = await _seed(backend)
    for call in VALID:
        headers = {**call.kwargs().get("headers", {}), "api_key": STATIC_KEY, "Authorization": "Bearer other"}
        response = await call.send(client, seeded, headers=headers)
        assert response.status == 400, call.route
        _assert_documented(documents, call, 400)


async def test_an_accept_we_cannot_meet_is_406_everywhere(
    client: Client, backend: Backend, documents: dict[str, dict[str, Any]]
) -> None:
    seeded = await _seed(backend)
    for call in VALID:
        response = await call.send(
            client, seeded, headers={**call.kwargs().get("headers", {}), "Accept": "text/html"}
        )
        if call.route == IMAGE_ROUTE:  # an image is what it is, whatever Accept says
            assert response.status == 200
            assert 406 not in statuses(documents["swagger"], call.method, call.route)
            continue
        assert response.status == 406, call.route
        _assert_documented(documents, call, 406)


def _body_calls(documents: dict[str, dict[str, Any]]) -> list[Call]:
    return [
        call for call in VALID if "consumes" in operations(documents["swagger"])[(call.method, call.route)]
    ]


async def test_a_body_of_the_wrong_type_is_415_and_too_large_413(
    client: Client, backend: Backend, settings: GatewaySettings, documents: dict[str, dict[str, Any]]
) -> None:
    seeded = await _seed(backend)
    calls = _body_calls(documents)
    assert len(calls) == 11
    for call in calls:
        consumed = operations(documents["swagger"])[(call.method, call.route)]["consumes"]
        headers = {**call.kwargs().get("headers", {}), "Content-Type": "text/plain"}
        response = await call.send(client, seeded, data=io.BytesIO(b"name=x"), headers=headers, json=None)
        assert response.status == 415, call.route
        _assert_documented(documents, call, 415)
        too_much = b"x" * (settings.max_body_bytes + 1)
        if consumed == ["multipart/form-data"]:  # a real part, or the form is just malformed
            del headers["Content-Type"]
            response = await call.send(client, seeded, data=_upload(too_much), headers=headers)
        else:
            headers["Content-Type"] = consumed[0]
            response = await call.send(client, seeded, data=io.BytesIO(too_much), headers=headers, json=None)
        assert response.status == 413, call.route
        _assert_documented(documents, call, 413)


def _json(body: Any) -> dict[str, Any]:
    return {"json": body, "headers": KEY}


def _xml(body: bytes) -> dict[str, Any]:
    return {"data": body, "headers": {**KEY, "Content-Type": "application/xml"}}


BAD_INPUT: list[tuple[str, str, str, dict[str, Any], int]] = [
    # (method, route, url, request, expected status)
    (
        "POST",
        "/v2/pet",
        "/v2/pet",
        {"data": b"{", "headers": {**KEY, "Content-Type": "application/json"}},
        400,
    ),
    ("POST", "/v2/pet", "/v2/pet", _xml(b"<Pet><name>"), 400),
    ("POST", "/v2/pet", "/v2/pet", {"headers": {**KEY, "Content-Type": "application/json"}}, 400),
    ("POST", "/v2/pet", "/v2/pet", _json({"name": "Rex"}), 405),
    ("POST", "/v2/pet", "/v2/pet", _xml(b"<Pet><id>x</id></Pet>"), 405),
    ("POST", "/v2/pet", "/v2/pet", _json({**PET, "id": 1}), 409),
    ("POST", "/v2/pet", "/v2/pet", {"json": PET, "headers": {**KEY, "Idempotency-Key": "a b"}}, 400),
    (
        "POST",
        "/v2/store/order",
        "/v2/store/order",
        {"json": {"petId": 1}, "headers": {**KEY, "Idempotency-Key": ""}},
        400,
    ),
    ("POST", "/v2/user", "/v2/user", {"json": NEW_USER, "headers": {"Idempotency-Key": "k" * 256}}, 400),
    ("PUT", "/v2/store/order/{orderId}", "/v2/store/order/1", _json({"quantity": 2}), 400),
    ("PUT", "/v2/store/order/{orderId}", "/v2/store/order/1", _json({"id": 2, "status": "approved"}), 400),
    ("PUT", "/v2/store/order/{orderId}", "/v2/store/order/x", _json({"status": "approved"}), 400),
    ("PUT", "/v2/store/order/{orderId}", "/v2/store/order/99", _json({"status": "approved"}), 404),
    ("PUT", "/v2/store/order/{orderId}", "/v2/store/order/1", _json({"status": "delivered"}), 409),
    (
        "PUT",
        "/v2/store/order/{orderId}",
        "/v2/store/order/1",
        {"json": {"status": "approved"}, "headers": AS_KIT},
        403,
    ),
    ("PUT", "/v2/pet", "/v2/pet", _json(PET), 405),
    ("PUT", "/v2/pet", "/v2/pet", _json({**PET, "id": 99}), 404),
    (
        "PUT",
        "/v2/pet",
        "/v2/pet",
        {"data": b"[", "headers": {**KEY, "Content-Type": "application/json"}},
        400,
    ),
    ("GET", "/v2/pet/findByStatus", "/v2/pet/findByStatus", {}, 400),
    ("GET", "/v2/pet/findByStatus", "/v2/pet/findByStatus", {"params": {"status": "lost"}}, 400),
    (
        "GET",
        "/v2/pet/findByStatus",
        "/v2/pet/findByStatus",
        {"params": {"status": "sold", "limit": "0"}},
        400,
    ),
    (
        "GET",
        "/v2/pet/findByStatus",
        "/v2/pet/findByStatus",
        {"params": {"status": "sold", "pageToken": "?"}},
        400,
    ),
    ("GET", "/v2/pet/findByTags", "/v2/pet/findByTags", {"params": {"tags": ","}}, 400),
    ("GET", "/v2/pet/findByTags", "/v2/pet/findByTags", {"params": {"tags": "a", "limit": "1001"}}, 400),
    ("GET", "/v2/pet/{petId}", "/v2/pet/abc", {}, 400),
    ("GET", "/v2/pet/{petId}", "/v2/pet/0", {}, 400),
    ("GET", "/v2/pet/{petId}", "/v2/pet/99", {}, 404),
    ("POST", "/v2/pet/{petId}", "/v2/pet/abc", {"data": {"name": "x"}, "headers": KEY}, 400),
    ("POST", "/v2/pet/{petId}", "/v2/pet/99", {"data": {"name": "x"}, "headers": KEY}, 404),
    ("POST", "/v2/pet/{petId}", "/v2/pet/1", {"data": {"status": "lost"}, "headers": KEY}, 405),
    ("POST", "/v2/pet/{petId}", "/v2/pet/1", {"data": {"name": ""}, "headers": KEY}, 405),
    ("DELETE", "/v2/pet/{petId}", "/v2/pet/-1", {"headers": KEY}, 400),
    ("DELETE", "/v2/pet/{petId}", "/v2/pet/99", {"headers": KEY}, 404),
    ("DELETE", "/v2/pet/{petId}", "/v2/pet/2", {"headers": KEY}, 409),  # held by order 1
    ("PUT", "/v2/pet", "/v2/pet", _json({**PET, "id": 2, "status": "available"}), 409),
    ("POST", "/v2/pet/{petId}", "/v2/pet/2", {"data": {"status": "sold"}, "headers": KEY}, 409),
    (
        "POST",
        "/v2/pet/{petId}/uploadImage",
        "/v2/pet/1/uploadImage",
        {"data": aiohttp.FormData({"x": "1"}, default_to_multipart=True), "headers": KEY},
        400,
    ),
    (
        "POST",
        "/v2/pet/{petId}/uploadImage",
        "/v2/pet/x/uploadImage",
        {"data": _upload(), "headers": KEY},
        400,
    ),
    (
        "POST",
        "/v2/pet/{petId}/uploadImage",
        "/v2/pet/99/uploadImage",
        {"data": _upload(), "headers": KEY},
        404,
    ),
    ("POST", "/v2/store/order", "/v2/store/order", _json({"petId": 1, "quantity": 0}), 400),
    (
        "POST",
        "/v2/store/order",
        "/v2/store/order",
        _json({"petId": 1, "shipDate": "2024-01-01T00:00:00"}),
        400,
    ),
    ("POST", "/v2/store/order", "/v2/store/order", _json({"petId": 1, "status": "lost"}), 400),
    ("POST", "/v2/store/order", "/v2/store/order", _xml(b"<Order><quantity>2</quantity></Order>"), 400),
    ("POST", "/v2/store/order", "/v2/store/order", _json({"petId": 99}), 404),
    ("POST", "/v2/store/order", "/v2/store/order", _json({"petId": 2}), 409),  # held by order 1
    ("GET", "/v2/pet/{petId}/images/{imageId}", "/v2/pet/1/images/xyz", {}, 400),
    ("GET", "/v2/pet/{petId}/images/{imageId}", "/v2/pet/1/images/" + "f" * 32, {}, 404),
    ("GET", "/v2/store/order", "/v2/store/order?status=lost", {"headers": KEY}, 400),
    ("GET", "/v2/store/order", "/v2/store/order?petId=0", {"headers": KEY}, 400),
    ("GET", "/v2/store/order", "/v2/store/order?username=nobody", {"headers": KEY}, 404),
    ("GET", "/v2/store/order", "/v2/store/order?username=ann", {"headers": {"api_key": BOB_SESSION}}, 403),
    ("GET", "/v2/store/order/{orderId}", "/v2/store/order/1.5", {"headers": KEY}, 400),
    ("GET", "/v2/store/order/{orderId}", "/v2/store/order/99", {"headers": KEY}, 404),
    ("DELETE", "/v2/store/order/{orderId}", "/v2/store/order/x", {"headers": KEY}, 400),
    ("DELETE", "/v2/store/order/{orderId}", "/v2/store/order/99", {"headers": KEY}, 404),
    ("POST", "/v2/user", "/v2/user", {"json": {"username": "x"}}, 400),
    ("POST", "/v2/user", "/v2/user", {"json": {**NEW_USER, "email": "no-at"}}, 400),
    ("POST", "/v2/user", "/v2/user", {"json": {**NEW_USER, "username": "ann"}}, 409),
    ("POST", "/v2/user/createWithArray", "/v2/user/createWithArray", _json([]), 400),
    ("POST", "/v2/user/createWithArray", "/v2/user/createWithArray", _json(NEW_USER), 400),
    ("POST", "/v2/user/createWithList", "/v2/user/createWithList", _json([{"username": "x"}]), 400),
    ("GET", "/v2/user/login", "/v2/user/login", {"params": {"username": "ann"}}, 400),
    ("GET", "/v2/user/login", "/v2/user/login", {"params": {"username": "ann", "password": "wrong"}}, 400),
    ("GET", "/v2/user/login", "/v2/user/login", {"params": {"username": "zed", "password": PASSWORD}}, 404),
    ("GET", "/v2/user/{username}", "/v2/user/zed", {}, 404),
    ("GET", "/v2/user/{username}", "/v2/user/ann", {"headers": {"api_key": "guessed"}}, 401),
    ("POST", "/v2/user", "/v2/user", {"json": NEW_USER, "headers": {"api_key": "guessed"}}, 401),
    ("POST", "/v2/pet", "/v2/pet", {"json": PET, "headers": AS_KIT}, 403),
    ("PUT", "/v2/pet", "/v2/pet", {"json": {**PET, "id": 1}, "headers": AS_KIT}, 403),
    ("POST", "/v2/pet/{petId}", "/v2/pet/1", {"data": {"name": "x"}, "headers": AS_KIT}, 403),
    ("DELETE", "/v2/pet/{petId}", "/v2/pet/1", {"headers": AS_KIT}, 403),
    (
        "POST",
        "/v2/pet/{petId}/uploadImage",
        "/v2/pet/1/uploadImage",
        {"data": _upload(), "headers": AS_KIT},
        403,
    ),
    (
        "POST",
        "/v2/user/createWithArray",
        "/v2/user/createWithArray",
        {"json": [NEW_USER], "headers": AS_KIT},
        403,
    ),
    (
        "POST",
        "/v2/user/createWithList",
        "/v2/user/createWithList",
        {"json": [NEW_USER], "headers": AS_KIT},
        403,
    ),
    ("PUT", "/v2/user/{username}", "/v2/user/ann", _json({"email": 5}), 400),
    ("PUT", "/v2/user/{username}", "/v2/user/zed", _json({"email": "z@example.com"}), 404),
    ("PUT", "/v2/user/{username}", "/v2/user/ann", _json({"username": "bob"}), 409),
    ("PUT", "/v2/user/{username}", "/v2/user/ann", {"json": {}, "headers": {"api_key": BOB_SESSION}}, 403),
    ("DELETE", "/v2/user/{username}", "/v2/user/zed", {"headers": KEY}, 404),
    ("DELETE", "/v2/user/{username}", "/v2/user/ann", {"headers": {"api_key": BOB_SESSION}}, 403),
    ("POST", "/v2/webhooks", "/v2/webhooks", {"json": WEBHOOK, "headers": AS_KIT}, 403),
    ("POST", "/v2/webhooks", "/v2/webhooks", _json({**WEBHOOK, "url": "http://h.example.com/"}), 400),
    ("POST", "/v2/webhooks", "/v2/webhooks", _json({**WEBHOOK, "eventTypes": ["order.lost"]}), 400),
    ("POST", "/v2/webhooks", "/v2/webhooks", _xml(b"<Webhook><url>"), 400),
    ("GET", "/v2/webhooks", "/v2/webhooks", {"headers": AS_KIT}, 403),
    ("DELETE", "/v2/webhooks/{webhookId}", "/v2/webhooks/1", {"headers": AS_KIT}, 403),
    ("DELETE", "/v2/webhooks/{webhookId}", "/v2/webhooks/0", {"headers": KEY}, 400),
    ("DELETE", "/v2/webhooks/{webhookId}", "/v2/webhooks/99", {"headers": KEY}, 404),
    ("GET", "/v2/webhooks/{webhookId}/deliveries", "/v2/webhooks/1/deliveries", {"headers": AS_KIT}, 403),
    ("GET", "/v2/webhooks/{webhookId}/deliveries", "/v2/webhooks/x/deliveries", {"headers": KEY}, 400),
    (
        "GET",
        "/v2/webhooks/{webhookId}/deliveries",
        "/v2/webhooks/1/deliveries?limit=0",
        {"headers": KEY},
        400,
    ),
    ("GET", "/v2/webhooks/{webhookId}/deliveries", "/v2/webhooks/99/deliveries", {"headers": KEY}, 404),
]


@pytest.mark.parametrize(
    ("method", "route", "url", "request_kwargs", "expected"),
    BAD_INPUT,
    ids=[f"{m} {u} {s}" for m, _, u, _, s in BAD_INPUT],
)
async def test_bad_input_gets_a_documented_status(
    client: Client,
    backend: Backend,
    documents: dict[str, dict[str, Any]],
    method: str,
    route: str,
    url: str,
    request_kwargs: dict[str, Any],
    expected: int,
) -> None:
    seeded = await _seed(backend)
    call = Call(method, route, url)
    response = await call.send(client, seeded, **request_kwargs)
    assert response.status == expected, await response.text()
    _assert_documented(documents, call, expected)


CREATES = [
    ("/v2/pet", lambda n: {"json": {**PET, "name": f"Rex {n}"}, "headers": KEY}),
    ("/v2/store/order", lambda n: {"json": {"petId": 1, "quantity": n}, "headers": KEY}),
    ("/v2/user", lambda n: {"json": {**NEW_USER, "firstName": f"Cat {n}"}}),
]


@pytest.mark.parametrize(("route", "request_kwargs"), CREATES, ids=[route for route, _ in CREATES])
async def test_a_reused_idempotency_key_gets_a_documented_status(
    client: Client,
    backend: Backend,
    documents: dict[str, dict[str, Any]],
    route: str,
    request_kwargs: Callable[[int], dict[str, Any]],
) -> None:
    await _seed(backend)
    call = Call("POST", route, route)
    first, other = (request_kwargs(n) for n in (1, 2))
    for kwargs in (first, other):
        kwargs["headers"] = {**kwargs.get("headers", {}), "Idempotency-Key": "k-1"}
    assert (await call.send(client, **first)).status == 200
    response = await call.send(client, **other)
    assert response.status == 422, await response.text()
    _assert_documented(documents, call, 422)


async def test_a_twin_of_a_create_still_running_gets_a_documented_status(
    client: Client, backend: Backend, documents: dict[str, dict[str, Any]]
) -> None:
    await _seed(backend)
    call = Call("POST", "/v2/store/order", "/v2/store/order")
    order: dict[str, Any] = {"json": {"petId": 1}, "headers": {**KEY, "Idempotency-Key": "k-1"}}
    asked = backend.calls.count("PetService/ReservePet")
    pet_question = backend.calls.hold("PetService/ReservePet")  # the first create waits there
    first = asyncio.create_task(call.send(client, **order))
    await until(lambda: backend.calls.count("PetService/ReservePet") > asked)
    twin = await call.send(client, **order)
    pet_question.set()
    assert (await first).status == 200
    assert twin.status == 409, await twin.text()
    _assert_documented(documents, call, 409)


# ---------------------------------------------------------------------------------------
# Services that refuse: every operation answers 429 or 503, and says so in its description


@pytest.fixture(
    params=[
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    ]
)
def refusal(request: pytest.FixtureRequest) -> grpc.StatusCode:
    code: grpc.StatusCode = request.param
    return code


@pytest.fixture
async def refused(settings: GatewaySettings, refusal: grpc.StatusCode) -> AsyncIterator[Client]:
    async with refusing_services(refusal) as clients:
        async for served in serve_gateway(settings, clients):
            yield served


EXPECTED = {
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 503,
}


async def test_every_operation_documents_what_refusing_services_make_it_answer(
    refused: Client, refusal: grpc.StatusCode
) -> None:
    documents = await both_documents(refused)
    # Nothing was seeded: signed sessions the gateway must check with the (refusing) user service.
    made_up = Seeded({KIT_SESSION: issue_token(3, "kit")[0], BOB_SESSION: issue_token(2, "bob")[0]}, "f" * 32)
    sent: Callable[[Call], Awaitable[aiohttp.ClientResponse]] = lambda call: call.send(refused, made_up)  # noqa: E731
    for call in VALID:
        response = await sent(call)
        assert response.status == EXPECTED[refusal], (call.route, await response.text())
        _assert_documented(documents, call, response.status)
        if response.status == 429:
            assert response.headers["Retry-After"] == "1"
