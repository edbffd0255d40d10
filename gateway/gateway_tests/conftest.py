"""Fixtures: the real services in this process, and the gateway under test in front of them."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import grpc
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import generate_latest

from petstore_gateway.app import create_app
from petstore_gateway.clients import ServiceClients
from petstore_gateway.keys import METRICS
from petstore_gateway.settings import GatewaySettings

from .backend import SESSION_SECRET, Backend, running_backend

STATIC_KEY = "static-key-for-tests"
Client = TestClient[web.Request, web.Application]


def metrics_text(client: Client) -> str:
    """What the gateway's metrics listener (METRICS_PORT, not the API) would serve for it."""
    return generate_latest(client.app[METRICS].registry).decode()


def api_of(client: Client) -> web.Application:
    """The API's sub-application (mounted at API_PREFIX)."""
    [api] = [
        resource.get_info()["app"]
        for resource in client.app.router.resources()
        if isinstance(resource, web.PrefixedSubAppResource)
    ]
    assert isinstance(api, web.Application)
    return api


def unused_address() -> str:
    """An address nothing listens on: a service that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def settings() -> GatewaySettings:
    return GatewaySettings.from_env(
        {
            "PETSTORE_SESSION_SECRET": SESSION_SECRET,
            "PETSTORE_API_KEYS": f"another-key,{STATIC_KEY}",
            "GRPC_TIMEOUT_SECONDS": "2",
        }
    )


@pytest.fixture
def service_interceptors() -> tuple[grpc.aio.ServerInterceptor, ...]:
    """Put in front of the services (a module overrides this to delay or refuse some calls)."""
    return ()


@pytest.fixture
async def backend(service_interceptors: tuple[grpc.aio.ServerInterceptor, ...]) -> AsyncIterator[Backend]:
    async with running_backend(interceptors=service_interceptors) as running:
        yield running


async def serve_gateway(settings: GatewaySettings, clients: ServiceClients) -> AsyncIterator[Client]:
    async with TestClient(TestServer(create_app(settings, clients=clients))) as client:
        yield client
    await clients.close()


@pytest.fixture
async def client(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    async for served in serve_gateway(settings, backend.clients()):
        yield served
