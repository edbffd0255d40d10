"""Optional tracing: off imports nothing; on, a gRPC call is one trace of a client and a server span."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.grpc_client import is_serving
from petstore_common.grpc_server import ServiceDefinition, start_service
from petstore_common.settings import ServiceSettings
from petstore_common.tracing import Tracing, configure_tracing, tracing_enabled

SERVICE = "test.v1.EchoService"


@pytest.mark.parametrize(
    ("value", "enabled"),
    [("1", True), ("true", True), (" ON ", True), ("yes", True), ("", False), ("0", False), ("false", False)],
)
def test_the_switch(value: str, enabled: bool) -> None:
    assert tracing_enabled({"OTEL_TRACING": value}) is enabled


def test_off_by_default_nothing_is_set() -> None:
    assert configure_tracing("pet-service", {}) is None
    assert configure_tracing("pet-service", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) is None
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def test_off_the_bootstrap_never_loads_opentelemetry() -> None:
    program = (
        "import sys\n"
        "import petstore_common.grpc_server\n"
        "from petstore_common.tracing import configure_tracing\n"
        "assert configure_tracing('pet-service', {}) is None\n"
        "print(sorted(name for name in sys.modules if name.startswith('opentelemetry')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing = configure_tracing("echo-service", {"OTEL_TRACING": "1"}, exporter=exporter)
    assert isinstance(tracing, Tracing)
    try:
        yield exporter
    finally:
        tracing.shutdown()


async def _echo(request: bytes, context: object) -> bytes:
    return request


def _register(server: grpc.aio.Server) -> None:
    echo: grpc.RpcMethodHandler[Any, Any] = grpc.unary_unary_rpc_method_handler(_echo)
    handlers = {"Echo": echo}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))


async def _ready() -> None:
    return None


async def test_on_a_call_is_one_trace_across_client_and_server(spans: InMemorySpanExporter) -> None:
    settings = ServiceSettings.from_env(
        default_port=0, default_database="t", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    running = await start_service(ServiceDefinition(SERVICE, _register, _ready), settings)
    try:
        async with signed_channel(f"127.0.0.1:{running.port}") as channel:
            assert await is_serving(channel, "")  # health checks are left out of traces
            echo: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{SERVICE}/Echo")
            assert await echo(b"ping", timeout=5) == b"ping"
    finally:
        await running.stop(None)
    finished = spans.get_finished_spans()
    assert sorted((span.kind.name, span.name) for span in finished) == [
        ("CLIENT", f"/{SERVICE}/Echo"),
        ("SERVER", f"/{SERVICE}/Echo"),
    ]
    server = next(span for span in finished if span.kind is SpanKind.SERVER)
    client = next(span for span in finished if span.kind is SpanKind.CLIENT)
    assert server.context is not None
    assert client.context is not None
    assert server.context.trace_id == client.context.trace_id
    assert server.parent is not None
    assert server.parent.span_id == client.context.span_id
    assert server.resource.attributes["service.name"] == "echo-service"
