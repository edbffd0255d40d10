"""Each operation's request steps, built once at start from its declaration (pipeline.py): a
request runs only the steps its operation needs, and what it answers is what the seven
middlewares answered."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import cast

import pytest

from petstore_gateway.app import create_app
from petstore_gateway.auth import Authenticator, Principal
from petstore_gateway.clients import ServiceClients
from petstore_gateway.operations import Access
from petstore_gateway.pipeline import build_pipeline
from petstore_gateway.routes import OPERATIONS
from petstore_gateway.settings import GatewaySettings

from .backend import Backend
from .conftest import STATIC_KEY, Client, metrics_text, serve_gateway

NO_CLIENTS = cast(ServiceClients, object())
"""The app is built, never started: no call reaches a service."""


def limits_off(settings: GatewaySettings) -> GatewaySettings:
    return replace(settings, rate_limit_per_second=0)


@pytest.mark.parametrize("limited", [True, False])
def test_each_operation_gets_the_steps_its_declaration_needs(
    settings: GatewaySettings, limited: bool
) -> None:
    app = create_app(settings if limited else limits_off(settings), clients=NO_CLIENTS)
    for op in OPERATIONS:
        steps = build_pipeline(op, app).steps
        assert steps[:4] == ("request_id", "observe", "cors_headers", "errors"), op.operation_id
        assert ("rate_limit" in steps) is limited, op.operation_id
        assert ("negotiation" in steps) is op.negotiated, op.operation_id
        # An OPEN operation only checks that the credential headers agree (400 if not).
        assert ("auth" in steps) is (op.access is not Access.OPEN), op.operation_id
        assert steps[-1] == "handler"


def test_limits_off_builds_no_limiter_step_on_the_lean_path_either(settings: GatewaySettings) -> None:
    app = create_app(limits_off(settings), clients=NO_CLIENTS)
    assert "rate_limit" not in build_pipeline(None, app).steps
    assert "rate_limit" in build_pipeline(None, create_app(settings, clients=NO_CLIENTS)).steps


def test_some_operations_are_open_some_not_negotiated() -> None:
    """The tests above would prove little if every operation were alike."""
    assert {op.access for op in OPERATIONS} == set(Access)
    assert any(not op.negotiated for op in OPERATIONS)


@pytest.fixture
async def unlimited(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    async for served in serve_gateway(limits_off(settings), backend.clients()):
        yield served


async def test_an_open_operation_never_authenticates_the_credential_sent(
    unlimited: Client, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str | None] = []
    authenticate = Authenticator.authenticate

    async def spy(self: Authenticator, api_key: str | None) -> Principal:
        checked.append(api_key)
        return await authenticate(self, api_key)

    monkeypatch.setattr(Authenticator, "authenticate", spy)
    pet_id = (await backend.add_pet()).id
    for credential in (STATIC_KEY, "made-up", "a.b.c"):
        response = await unlimited.get(f"/v2/pet/{pet_id}", headers={"api_key": credential})
        assert response.status == 200  # a bad credential is no reason to refuse an OPEN read
    assert checked == []
    # The spy sees what it should: a staff-only operation authenticates, and refuses a made-up key.
    refused = await unlimited.delete(f"/v2/pet/{pet_id}", headers={"api_key": "made-up"})
    assert refused.status == 401
    assert refused.headers["WWW-Authenticate"] == 'Bearer realm="petstore"'
    assert checked == ["made-up"]


async def test_open_operations_still_refuse_conflicting_credentials(unlimited: Client) -> None:
    response = await unlimited.get("/v2/pet/1", headers={"api_key": "one", "Authorization": "Bearer two"})
    assert response.status == 400
    assert (await response.json())["type"] == "error"


async def test_concurrent_requests_each_get_their_own_id_and_headers(
    client: Client, backend: Backend
) -> None:
    """Raw requests side by side, answered by operations (200, 400, 401) and by the lean path
    (404, 405, a preflight): each carries its own X-Request-ID and the Vary it always had."""
    pet_id = (await backend.add_pet()).id
    host, port = client.server.host, client.server.port
    requests = {
        f"GET /v2/pet/{pet_id}": (200, "Accept"),
        "GET /v2/pet/abc": (400, "Accept, api_key, Authorization"),
        "DELETE /v2/pet/1": (401, "Accept, api_key, Authorization"),
        "GET /v2/nowhere": (404, "Accept, api_key, Authorization"),
        "PATCH /v2/pet/1": (405, "Accept, api_key, Authorization"),
        "OPTIONS /v2/pet/1": (204, "Accept"),
    }

    async def send(line: str, request_id: str) -> tuple[int, dict[str, str]]:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            head = f"{line} HTTP/1.1\r\nHost: x\r\nX-Request-ID: {request_id}\r\nConnection: close\r\n"
            writer.write(f"{head}\r\n".encode())
            answer = (await reader.readuntil(b"\r\n\r\n")).decode()
        finally:
            writer.close()
        status_line, *fields = answer.strip().split("\r\n")
        headers = dict(field.split(": ", 1) for field in fields)
        return int(status_line.split()[1]), headers

    lines = [line for line in requests for _ in range(5)]
    answers = await asyncio.gather(*(send(line, f"req-{n}") for n, line in enumerate(lines)))
    for n, (line, (status, headers)) in enumerate(zip(lines, answers, strict=True)):
        expected_status, expected_vary = requests[line]
        assert status == expected_status, line
        assert headers["X-Request-ID"] == f"req-{n}", line
        assert headers["Vary"] == expected_vary, line
        assert headers["X-Content-Type-Options"] == "nosniff", line


async def test_each_request_runs_its_steps_once(client: Client) -> None:
    """An operation's request passes the app's middleware untouched: one metric sample each,
    whether an operation or the lean path answered."""
    await client.get("/v2/pet/abc")
    await client.get("/v2/nowhere")
    text = metrics_text(client)
    assert 'gateway_http_requests_total{method="GET",route="/v2/pet/{petId}",status="400"} 1.0' in text
    assert 'gateway_http_requests_total{method="GET",route="<unmatched>",status="404"} 1.0' in text
