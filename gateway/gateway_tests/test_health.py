from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from grpc_health.v1 import health_pb2

from petstore_common.grpc_client import WRITES_HEALTH_SUFFIX
from petstore_common.metrics import start_metrics_server
from petstore_common.settings import SettingsError
from petstore_gateway.clients import ORDER_SERVICE
from petstore_gateway.keys import METRICS
from petstore_gateway.settings import GatewaySettings
from petstore_gateway.workers import metrics_port

from .backend import SESSION_SECRET, Backend
from .conftest import STATIC_KEY, Client, serve_gateway, unused_address


@pytest.fixture
async def pet_down(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    """The gateway with nothing listening at the pet service's address."""
    clients = backend.clients(pet_addr=unused_address())
    async for served in serve_gateway(settings, clients):
        yield served


async def test_livez(client: Client) -> None:
    response = await client.get("/livez")
    assert response.status == 200
    assert (await response.json())["message"] == "live"
    assert "X-Instance-ID" not in response.headers


@pytest.fixture
async def with_instance_id(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    clients = backend.clients()
    async for served in serve_gateway(replace(settings, instance_id="run-3f9a"), clients):
        yield served


async def test_livez_names_the_instance_it_was_given(with_instance_id: Client) -> None:
    """How the process runner knows that the gateway answering on its port is its own."""
    response = await with_instance_id.get("/livez")
    assert response.headers["X-Instance-ID"] == "run-3f9a"


@pytest.mark.parametrize("value", ["a" * 65, "has space", "crlf\r\nX-Evil: 1"])
def test_an_instance_id_that_cannot_be_a_header_value_is_refused(value: str) -> None:
    with pytest.raises(SettingsError, match="GATEWAY_INSTANCE_ID"):
        GatewaySettings.from_env({"PETSTORE_SESSION_SECRET": SESSION_SECRET, "GATEWAY_INSTANCE_ID": value})


async def test_ready_when_every_service_serves(client: Client) -> None:
    response = await client.get("/readyz")
    assert response.status == 200


async def test_not_ready_names_the_service_that_is_not_serving(client: Client, backend: Backend) -> None:
    # What the order service reports when it cannot reach its database.
    await backend.stack.order.health.set(ORDER_SERVICE, health_pb2.HealthCheckResponse.NOT_SERVING)
    response = await client.get("/readyz")
    assert response.status == 503
    body = await response.json()
    assert body["type"] == "error"
    assert "order" in body["message"]
    assert "pet" not in body["message"]


async def test_a_database_refusing_writes_is_named_while_reads_keep_the_gateway_ready(
    client: Client, backend: Backend
) -> None:
    # What the order service reports while its database's disk is full.
    await backend.stack.order.health.set(
        ORDER_SERVICE + WRITES_HEALTH_SUFFIX, health_pb2.HealthCheckResponse.NOT_SERVING
    )
    response = await client.get("/readyz")
    assert response.status == 200
    message = (await response.json())["message"]
    assert message == "ready; writes refused by the order service's database, reads work"

    await backend.stack.order.health.set(
        ORDER_SERVICE + WRITES_HEALTH_SUFFIX, health_pb2.HealthCheckResponse.SERVING
    )
    assert (await (await client.get("/readyz")).json())["message"] == "ready"


async def test_not_ready_when_a_service_is_unreachable(pet_down: Client) -> None:
    response = await pet_down.get("/readyz")
    assert response.status == 503
    assert "pet" in (await response.json())["message"]


async def test_a_service_that_is_down_is_503_not_500(pet_down: Client) -> None:
    for accept in ("application/json", "application/xml"):
        response = await pet_down.get("/v2/pet/1", headers={"Accept": accept})
        assert response.status == 503
        assert "the pet service is unavailable" in await response.text()


@pytest.mark.parametrize("headers", [{}, {"api_key": STATIC_KEY}])
async def test_metrics_are_not_served_on_the_api_port_to_anybody(
    client: Client, headers: dict[str, str]
) -> None:
    for method in ("GET", "HEAD"):
        response = await client.request(method, "/metrics", headers=headers)
        assert response.status == 404, method
    assert "gateway_http_requests_total" not in await (await client.get("/metrics", headers=headers)).text()


async def test_the_metrics_port_counts_requests_by_route_template(client: Client) -> None:
    await client.get("/v2/pet/12345")
    await client.get("/v2/no/such/thing")
    await client.patch("/v2/store/inventory")  # a known path, a method it does not take
    await client.patch("/v2/pet/12345")
    port = int(unused_address().rsplit(":", 1)[1])
    served = start_metrics_server(port, registry=client.app[METRICS].registry, addr="127.0.0.1")
    assert served is not None
    try:
        text = await asyncio.to_thread(_read, f"http://127.0.0.1:{served.port}/metrics")
    finally:
        served.stop()
    assert 'gateway_http_requests_total{method="GET",route="/v2/pet/{petId}",status="404"} 1.0' in text
    assert 'route="<unmatched>",status="404"' in text
    # A 405 names the resource whose path matched, and never the raw path.
    assert 'gateway_http_requests_total{method="PATCH",route="/v2/store/inventory",status="405"} 1.0' in text
    assert 'gateway_http_requests_total{method="PATCH",route="/v2/pet/{petId}",status="405"} 1.0' in text
    assert "gateway_http_request_duration_seconds_bucket" in text
    assert "gateway_pet_cache_live" in text
    assert "12345" not in text


def _read(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a local test URL
        return str(response.read().decode())


def test_metrics_port_zero_is_no_listener() -> None:
    assert start_metrics_server(0) is None


@pytest.mark.parametrize(("base", "index", "port"), [(9090, 0, 9090), (9090, 2, 9092), (0, 2, 0)])
def test_each_worker_serves_its_metrics_on_a_port_of_its_own(base: int, index: int, port: int) -> None:
    assert metrics_port(base, index) == port


@pytest.mark.parametrize(("metrics", "workers"), [("8080", "1"), ("8079", "2"), ("65535", "2")])
def test_a_metrics_port_that_would_be_the_api_port_is_refused(metrics: str, workers: str) -> None:
    env = {"PETSTORE_SESSION_SECRET": SESSION_SECRET, "METRICS_PORT": metrics, "GATEWAY_WORKERS": workers}
    with pytest.raises(SettingsError, match="METRICS_PORT"):
        GatewaySettings.from_env(env)
