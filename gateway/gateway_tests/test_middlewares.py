from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import AsyncIterator

import pytest

from petstore_gateway.middlewares import REQUEST_ID_HEADER
from petstore_gateway.operations import OPERATION_OF_ROUTE, Access

from .backend import Backend
from .conftest import STATIC_KEY, Client, api_of
from .wire import Wire

WRITE = {"api_key": STATIC_KEY}


async def test_a_safe_request_id_is_echoed_and_forwarded(client: Client, backend: Backend) -> None:
    await backend.add_pet(1, "rex")
    response = await client.get("/v2/pet/1", headers={REQUEST_ID_HEADER: "trace-42.a:b"})
    assert response.status == 200
    assert response.headers[REQUEST_ID_HEADER] == "trace-42.a:b"
    assert [call.request_id for call in backend.calls.of("PetService/GetPet")] == ["trace-42.a:b"]


@pytest.mark.parametrize("given", ["", "has space", "x" * 200, "<script>"])
async def test_an_unsafe_request_id_is_replaced(client: Client, backend: Backend, given: str) -> None:
    response = await client.get("/v2/pet/1", headers={REQUEST_ID_HEADER: given})
    generated = response.headers[REQUEST_ID_HEADER]
    assert generated != given
    assert len(generated) == 32
    assert [call.request_id for call in backend.calls.of("PetService/GetPet")] == [generated]


async def test_every_response_has_a_request_id_even_errors(client: Client) -> None:
    for response in (
        await client.get("/nowhere"),
        await client.get("/v2/pet/abc"),
        await client.post("/v2/pet", data=b"{}"),
        await client.get("/livez"),
    ):
        assert response.headers[REQUEST_ID_HEADER]


@pytest.mark.parametrize("wire", list(Wire))
async def test_unknown_routes_are_404_with_the_error_body(client: Client, wire: Wire) -> None:
    response = await client.get("/v2/nothing/here", headers={"Accept": wire.value})
    assert response.status == 404
    assert await wire.read(response) == {"code": 404, "type": "error", "message": "no such resource"}


async def test_a_wrong_method_is_405_with_allow(client: Client) -> None:
    response = await client.patch("/v2/pet/1", headers=WRITE)
    assert response.status == 405
    assert {"GET", "POST", "DELETE"} <= set(response.headers["Allow"].split(","))
    assert (await response.json())["type"] == "error"


async def test_unacceptable_accept_is_406_in_json(client: Client) -> None:
    response = await client.get("/v2/pet/1", headers={"Accept": "text/html"})
    assert response.status == 406
    body = await response.json()
    assert body["code"] == 406
    assert "application/json" in body["message"]


async def test_probes_answer_whatever_the_accept(client: Client) -> None:
    response = await client.get("/livez", headers={"Accept": "text/html"})
    assert response.status == 200


async def _chunks(size: int) -> AsyncIterator[bytes]:
    for _ in range(size // 65536):
        yield b" " * 65536


@pytest.mark.parametrize("wire", list(Wire))
async def test_bodies_over_the_limit_are_413(client: Client, wire: Wire) -> None:
    body = b'{"name": "' + b"x" * (1024 * 1024) + b'"}'
    response = await client.post("/v2/pet", data=io.BytesIO(body), headers=wire.headers(**WRITE))
    assert response.status == 413
    assert (await wire.read(response))["code"] == 413


async def test_chunked_bodies_over_the_limit_are_413(client: Client) -> None:
    response = await client.post(
        "/v2/pet", data=_chunks(2 * 1024 * 1024), headers={"Content-Type": "application/json", **WRITE}
    )
    assert response.status == 413
    assert (await response.json())["message"] == "request body is larger than 1048576 bytes"


async def test_unhandled_errors_are_a_generic_500(
    client: Client, backend: Backend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(_: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("petstore_gateway.routes.pet.pet_to_wire", broken)
    await backend.add_pet(1, "rex")
    with caplog.at_level(logging.ERROR):
        response = await client.get("/v2/pet/1")
    assert response.status == 500
    text = await response.text()
    assert "internal error" in text
    assert "Traceback" not in text
    assert "secret internals" not in text
    assert any(record.exc_info for record in caplog.records)


async def test_one_access_log_line_per_request_with_the_route_template(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="petstore_gateway.access"):
        await client.get("/v2/user/login?username=ann&password=hunter2", headers={REQUEST_ID_HEADER: "rid-1"})
    lines = [r for r in caplog.records if r.name == "petstore_gateway.access"]
    assert len(lines) == 1
    line = lines[0]
    assert (line.method, line.route, line.status) == ("GET", "/v2/user/login", 404)  # type: ignore[attr-defined]
    assert "hunter2" not in str(line.__dict__)


@pytest.mark.parametrize(
    ("method", "route", "expected"),
    [
        ("GET", "/v2/pet/{petId}", Access.OPEN),
        ("GET", "/v2/store/inventory", Access.OPEN),
        ("GET", "/v2/user/login", Access.OPEN),
        ("GET", "/v2/user/logout", Access.OPEN),
        ("POST", "/v2/user", Access.OPTIONAL),
        ("GET", "/v2/user/{username}", Access.OPTIONAL),
        ("HEAD", "/v2/user/{username}", Access.OPTIONAL),
        ("POST", "/v2/pet", Access.STAFF),
        ("PUT", "/v2/store/order/{orderId}", Access.STAFF),
        ("POST", "/v2/store/order", Access.REQUIRED),
        ("PUT", "/v2/user/{username}", Access.REQUIRED),
        ("GET", "/v2/store/order/{orderId}", Access.REQUIRED),
        ("HEAD", "/v2/store/order/{orderId}", Access.REQUIRED),
        ("DELETE", "/v2/store/order/{orderId}", Access.REQUIRED),
        ("POST", "/v2/user/createWithList", Access.STAFF),
    ],
)
def test_which_operations_need_a_key(client: Client, method: str, route: str, expected: Access) -> None:
    """As the app routes them: a GET's HEAD is the GET's operation."""
    [served] = [
        r
        for r in client.app.router.routes()
        if r.method == method and r.resource and r.resource.canonical == route
    ]
    assert api_of(client)[OPERATION_OF_ROUTE][served].access is expected


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v2/pet"),
        ("PUT", "/v2/pet"),
        ("POST", "/v2/pet/1"),
        ("DELETE", "/v2/pet/1"),
        ("POST", "/v2/pet/1/uploadImage"),
        ("POST", "/v2/store/order"),
        ("GET", "/v2/store/order/1"),
        ("DELETE", "/v2/store/order/1"),
        ("POST", "/v2/user/createWithArray"),
        ("POST", "/v2/user/createWithList"),
        ("PUT", "/v2/user/ann"),
        ("DELETE", "/v2/user/ann"),
    ],
)
@pytest.mark.parametrize("wire", list(Wire))
async def test_writes_without_a_valid_key_are_401(client: Client, method: str, path: str, wire: Wire) -> None:
    for headers in ({}, {"api_key": "wrong"}):
        response = await client.request(method, path, data=b"{}", headers=wire.headers(**headers))
        assert response.status == 401
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="petstore"'
        body = await wire.read(response)
        assert (body["code"], body["type"]) == (401, "error")


@pytest.mark.parametrize(("path", "status"), [("/v2/pet/1", 200), ("/v2/pet/x", 400), ("/v2/nothing", 404)])
async def test_every_v2_answer_varies_on_accept(
    client: Client, backend: Backend, path: str, status: int
) -> None:
    await backend.add_pet(1, "Rex")
    response = await client.get(path, headers={"Accept": "application/xml"})
    assert response.status == status
    assert response.headers["Vary"].split(", ")[0] == "Accept"  # errors name the credentials too


async def test_probes_do_not_vary(client: Client) -> None:
    response = await client.get("/livez")
    assert "Vary" not in response.headers


STAFF_ONLY_REQUESTS = [
    ("POST", "/v2/pet", "application/xml"),
    ("PUT", "/v2/pet", "application/json"),
    ("POST", "/v2/pet/1", "application/x-www-form-urlencoded"),
    ("POST", "/v2/pet/1/uploadImage", "multipart/form-data; boundary=b"),
    ("PUT", "/v2/store/order/1", "application/json"),
    ("POST", "/v2/user/createWithArray", "application/json"),
]


@pytest.mark.parametrize(("method", "path", "content_type"), STAFF_ONLY_REQUESTS)
async def test_a_staff_only_operation_refuses_others_before_reading_the_body(
    client: Client, backend: Backend, method: str, path: str, content_type: str
) -> None:
    """The body is announced (a megabyte) and never sent: the refusal cannot have read it."""
    token = await backend.customer("ann", 7)
    backend.calls.clear()
    assert client.server.port is not None
    for credential, status in ((b"", 401), (b"api_key: " + token.encode() + b"\r\n", 403)):
        reader, writer = await asyncio.open_connection("127.0.0.1", client.server.port)
        try:
            writer.write(
                f"{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Type: {content_type}\r\n".encode()
                + credential
                + b"Content-Length: 1000000\r\n\r\n<"
            )
            await writer.drain()
            status_line = await asyncio.wait_for(reader.readline(), 2)
        finally:
            writer.close()
        assert status_line.split()[1] == str(status).encode()
    assert backend.calls.to("PetService") == []  # refused by the gateway: never asked
