"""Fixtures: the real services in this process, and the gateway under test in front of them."""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from pathlib import Path

import grpc
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import generate_latest

from petstore_gateway import app as app_module
from petstore_gateway.apidoc.documents import ApiDocuments
from petstore_gateway.apidoc.routes import build_documents
from petstore_gateway.app import create_app
from petstore_gateway.clients import ServiceClients
from petstore_gateway.keys import METRICS
from petstore_gateway.operations import Operation
from petstore_gateway.settings import GatewaySettings

from .backend import SESSION_SECRET, Backend, running_backend

STATIC_KEY = "static-key-for-tests"
Client = TestClient[web.Request, web.Application]
PACKAGE_WORKERS = 2
"""pytest-xdist workers for a run of this whole package (as `make unit` runs it): one per core of
the machine it is timed on. Every test sets up services and a gateway of its own, so the tests
share nothing and may run in any process."""


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """A run of the whole package goes on PACKAGE_WORKERS workers, unless -n says how many (-n 0:
    none). A run of some of its files or tests stays in one process: it starts sooner."""
    if not config.pluginmanager.hasplugin("xdist") or "PYTEST_XDIST_WORKER" in os.environ:
        return
    whole_package = [Path(arg).resolve() for arg in config.args] == [Path(__file__).parent]
    if whole_package and config.option.numprocesses is None:
        config.option.numprocesses = PACKAGE_WORKERS


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


def default_settings() -> GatewaySettings:
    """The gateway's settings in the tests, unless a test says otherwise."""
    return GatewaySettings.from_env(
        {
            "PETSTORE_SESSION_SECRET": SESSION_SECRET,
            "PETSTORE_API_KEYS": f"another-key,{STATIC_KEY}",
            "GRPC_TIMEOUT_SECONDS": "2",
        }
    )


@pytest.fixture
def settings() -> GatewaySettings:
    return default_settings()


@pytest.fixture(scope="session", autouse=True)
def documents_built_once() -> Iterator[None]:
    """create_app builds the API description from its operations and body bound alone, the same
    bytes every time, once per process when deployed. The tests make an app per test, and built
    anew for each it cost a ninth of the package's CPU time under coverage; so a test process
    builds each (operations, bound) pair once, with the real builder, and every app gets those
    bytes (apidoc's tests check what the apps serve)."""
    build = functools.cache(build_documents)

    def built_once(operations: Sequence[Operation], *, max_body_bytes: int) -> ApiDocuments:
        return build(tuple(operations), max_body_bytes=max_body_bytes)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app_module, "build_documents", built_once)
        yield


@pytest.fixture
def service_interceptors() -> tuple[grpc.aio.ServerInterceptor, ...]:
    """Put in front of the services (a module overrides this to delay or refuse some calls)."""
    return ()


@pytest.fixture
async def backend(service_interceptors: tuple[grpc.aio.ServerInterceptor, ...]) -> AsyncIterator[Backend]:
    async with running_backend(interceptors=service_interceptors) as running:
        yield running


async def serve_gateway(settings: GatewaySettings, clients: ServiceClients) -> AsyncGenerator[Client]:
    async with TestClient(TestServer(create_app(settings, clients=clients))) as client:
        yield client
    await clients.close()


@pytest.fixture
async def client(settings: GatewaySettings, backend: Backend) -> AsyncIterator[Client]:
    async for served in serve_gateway(settings, backend.clients()):
        yield served
