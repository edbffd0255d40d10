"""The access log as on-call reads it: every refused request's line (4xx, 5xx) says what the
client was told, the client address as the gateway derived it (behind a trusted proxy, whom the
proxy served), and the kind of caller, never its credential; a 429 names the limit that refused;
a probe that succeeded is DEBUG; a 2xx line carries what it always did. Each line is the one a
real request through the gateway's app produced."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import pytest

from petstore_common.caller_keys import generate
from petstore_common.logging import JsonFormatter, TextFormatter
from petstore_devstack.ports import free_port
from petstore_gateway.client_address import parse_networks
from petstore_gateway.head_limits import MAX_HEAD_BYTES
from petstore_gateway.settings import GatewaySettings

from .backend import PASSWORD, SESSION_SECRET, Backend
from .conftest import STATIC_KEY, Client, serve_gateway, unused_address
from .guarded import closed_after, connect, message_of, port, status_of

__all__ = ["port"]  # the fixture

ACCESS = "petstore_gateway.access"
STAFF = {"api_key": STATIC_KEY, "Content-Type": "application/json"}
PROXY_PEER = "127.0.0.1"
"""The test client's address: made a trusted proxy, so X-Forwarded-For names the client."""
FORWARDED_CLIENT = "203.0.113.9"
REFUSED_FIELDS = ("method", "route", "status", "ms", "reason", "client", "caller")


@pytest.fixture
def settings(settings: GatewaySettings) -> GatewaySettings:
    return replace(
        settings,
        max_body_bytes=1000,
        login_rate_limit_per_minute=1,
        trusted_proxies=parse_networks([PROXY_PEER]),
    )


@pytest.fixture
def access_lines(caplog: pytest.LogCaptureFixture) -> Callable[[], list[logging.LogRecord]]:
    caplog.set_level(logging.DEBUG, logger=ACCESS)

    def lines() -> list[logging.LogRecord]:
        return [record for record in caplog.records if record.name == ACCESS]

    return lines


def fields(record: logging.LogRecord) -> dict[str, Any]:
    return {
        key: getattr(record, key)
        for key in ("method", "route", "status", "ms", "reason", "limit", "client", "caller")
        if hasattr(record, key)
    }


async def refused_line(
    client: Client, lines: Callable[[], list[logging.LogRecord]], method: str, path: str, **kwargs: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request's answer body and the fields of the one access line it produced."""
    before = len(lines())
    headers = {"X-Forwarded-For": FORWARDED_CLIENT, **kwargs.pop("headers", {})}
    response = await client.request(method, path, headers=headers, **kwargs)
    body = await response.json()
    [record] = lines()[before:]
    assert record.levelno == logging.INFO
    line = fields(record)
    assert line["status"] == response.status == body["code"]
    return body, line


async def test_bad_json_names_the_reason_the_client_and_a_staff_caller(
    client: Client, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    body, line = await refused_line(client, access_lines, "POST", "/v2/pet", data=b'{"name": ', headers=STAFF)
    assert line["status"] == 400
    assert line["reason"] == body["message"]
    assert (line["route"], line["client"], line["caller"]) == ("/v2/pet", FORWARDED_CLIENT, "staff")
    assert "limit" not in line


async def test_an_unknown_key_is_told_apart_from_a_missing_one_and_never_logged(
    client: Client, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    made_up = "made-up-key-0123456789"
    _, missing = await refused_line(client, access_lines, "POST", "/v2/pet", json={"name": "rex"})
    body, line = await refused_line(
        client, access_lines, "POST", "/v2/pet", json={"name": "rex"}, headers={"api_key": made_up}
    )
    assert line["status"] == 401
    assert line["reason"] == body["message"] != missing["reason"]
    assert line["caller"] == "anonymous"  # not authenticated: no kind is known
    every_line = " ".join(str(value) for record in access_lines() for value in record.__dict__.values())
    assert made_up not in every_line


async def test_a_body_too_large_is_413_saying_so(
    client: Client, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    body, line = await refused_line(
        client, access_lines, "POST", "/v2/pet", data=b"{" + b" " * 5000, headers=STAFF
    )
    assert line["status"] == 413
    assert line["reason"] == body["message"] == "request body is larger than 1000 bytes"
    assert line["client"] == FORWARDED_CLIENT


async def test_a_wrong_method_is_405_saying_so(
    client: Client, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    body, line = await refused_line(client, access_lines, "PATCH", "/v2/pet/1")
    assert line["status"] == 405
    assert line["reason"] == body["message"] == "method not allowed on this resource"
    assert line["caller"] == "anonymous"


async def test_an_anonymous_write_refused_is_401_from_an_anonymous_caller(
    client: Client, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    body, line = await refused_line(client, access_lines, "POST", "/v2/pet", json={"name": "rex"})
    assert line["status"] == 401
    assert (line["reason"], line["caller"]) == (body["message"], "anonymous")


async def test_a_customer_refused_a_staff_operation_is_403_from_a_customer(
    client: Client, backend: Backend, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    token = await backend.customer("ann")
    body, line = await refused_line(
        client, access_lines, "POST", "/v2/pet", json={"name": "rex"}, headers={"api_key": token}
    )
    assert line["status"] == 403
    assert (line["reason"], line["caller"]) == (body["message"], "customer")
    every_line = " ".join(str(value) for record in access_lines() for value in record.__dict__.values())
    assert token not in every_line
    assert token.split(".")[1] not in every_line  # not even its claims


async def test_a_429_names_the_limit_that_refused(
    client: Client, backend: Backend, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    await backend.add_user("ann")
    login = f"/v2/user/login?username=ann&password={PASSWORD}"
    assert (await client.get(login, headers={"X-Forwarded-For": FORWARDED_CLIENT})).status == 200
    body, line = await refused_line(client, access_lines, "GET", login)
    assert line["status"] == 429
    assert line["limit"] == "login-per-minute"
    assert (line["reason"], line["client"], line["caller"]) == (
        body["message"],
        FORWARDED_CLIENT,
        "anonymous",
    )
    assert PASSWORD not in str(line)


@pytest.fixture
async def limited_client(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    async for served in serve_gateway(
        replace(settings, rate_limit_per_second=1, rate_limit_burst=1), backend.clients()
    ):
        yield served


async def test_the_per_client_limit_is_named_with_the_caller_it_refused(
    limited_client: Client, backend: Backend, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    token = await backend.customer("bob")
    await limited_client.get("/v2/store/inventory", headers={"api_key": token})
    body, line = await refused_line(
        limited_client, access_lines, "GET", "/v2/store/inventory", headers={"api_key": token}
    )
    assert line["status"] == 429
    assert (line["limit"], line["caller"], line["reason"]) == (
        "client-per-second",
        "customer",
        body["message"],
    )


@pytest.fixture
async def pet_service_down(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    async for served in serve_gateway(settings, backend.clients(pet_addr=unused_address())):
        yield served


async def test_a_503_names_the_service_that_is_down(
    pet_service_down: Client, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    body, line = await refused_line(pet_service_down, access_lines, "GET", "/v2/pet/1")
    assert line["status"] == 503
    assert line["reason"] == body["message"] == "the pet service is unavailable"


async def test_a_client_address_is_believed_only_from_a_trusted_proxy(
    client: Client,
    settings: GatewaySettings,
    backend: Backend,
    access_lines: Callable[[], list[logging.LogRecord]],
) -> None:
    async for direct in serve_gateway(replace(settings, trusted_proxies=()), backend.clients()):
        _, line = await refused_line(direct, access_lines, "PATCH", "/v2/pet/1")
    assert line["client"] == PROXY_PEER  # the forwarded address is anybody's to claim


async def test_a_successful_probe_is_debug_and_a_2xx_line_is_as_it_was(
    client: Client, backend: Backend, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    await backend.add_pet(1, "rex")
    for path in ("/livez", "/readyz", "/v2/pet/1"):
        assert (await client.get(path)).status == 200
    levels = [(record.levelno, fields(record)["route"]) for record in access_lines()]
    assert levels == [
        (logging.DEBUG, "/livez"),
        (logging.DEBUG, "/readyz"),
        (logging.INFO, "/v2/pet/{petId}"),
    ]
    assert set(fields(access_lines()[-1])) == {"method", "route", "status", "ms"}


async def test_the_written_line_reads_in_either_format(
    client: Client, access_lines: Callable[[], list[logging.LogRecord]]
) -> None:
    await client.patch("/v2/pet/1", headers={"X-Forwarded-For": FORWARDED_CLIENT})
    [record] = access_lines()
    text = TextFormatter("gateway").format(record)
    assert "request method=PATCH route=/v2/pet/{petId} status=405 ms=" in text
    assert f'reason="method not allowed on this resource" client={FORWARDED_CLIENT} caller=anonymous' in text
    json_line = JsonFormatter("gateway").format(record)
    assert f'"client":"{FORWARDED_CLIENT}","caller":"anonymous"' in json_line


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        pytest.param(b"GET /livez HTTP/1.1\r\nX-Pad: " + b"v" * MAX_HEAD_BYTES + b"\r\n\r\n", 431, id="431"),
        pytest.param(b"G\x01T /livez HTTP/1.1\r\nHost: t\r\n\r\n", 400, id="unparsable"),
    ],
)
async def test_a_request_refused_before_it_was_read_names_its_client_and_status(
    port: int, request_bytes: bytes, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """No request exists to log a line for: the guard's line says it all (connections.py)."""
    with caplog.at_level(logging.WARNING, logger="petstore_gateway.connections"):
        reader, writer = await connect(port, "127.0.0.3")
        writer.write(request_bytes)
        answer, _ = await closed_after(reader, within=2)
        writer.close()
    assert status_of(answer) == status
    [record] = [r for r in caplog.records if r.name == "petstore_gateway.connections"]
    assert (record.__dict__["client"], record.__dict__["status"]) == ("127.0.0.3", status)
    assert str(record.__dict__["reason"]).startswith(message_of(answer))  # what the client was told


def test_the_settings_at_start_read_one_per_line_without_secrets() -> None:
    """The start-up line on a terminal (LOG_FORMAT=text): the message, then each setting."""
    secret_key = "very-secret-static-key"
    dead = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [sys.executable, "-m", "petstore_gateway"],
        env={
            **os.environ,
            "LOG_FORMAT": "text",
            "CALLER_SIGNING_KEY": generate().seed,
            "PETSTORE_SESSION_SECRET": SESSION_SECRET,
            "PETSTORE_API_KEYS": secret_key,
            "GATEWAY_PORT": str(free_port()),
            "PET_SERVICE_ADDR": dead,
            "ORDER_SERVICE_ADDR": dead,
            "USER_SERVICE_ADDR": dead,
            "WEBHOOK_SERVICE_ADDR": dead,
        },
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        lines: list[str] = []
        while not any(" gateway: serving " in line for line in lines):
            line = process.stderr.readline()
            assert line, "the gateway exited before serving:\n" + "".join(lines)
            lines.append(line)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
    text = "".join(lines)
    starting = next(index for index, line in enumerate(lines) if " gateway: starting" in line)
    assert lines[starting].rstrip().endswith("gateway: starting")
    shown = [line.strip() for line in lines[starting + 1 :] if line.startswith("    settings.")]
    assert f"settings.pet_service_addr={dead}" in shown
    assert len(shown) > 20
    assert all(len(line) < 120 for line in shown)
    assert secret_key not in text
    assert SESSION_SECRET not in text
    assert "api_keys" not in text
