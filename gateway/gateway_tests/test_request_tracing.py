"""OTEL_TRACING=1: a request through the gateway is a server span, its service call a child span."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aiohttp.test_utils import TestClient, TestServer
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from petstore_common.tracing import Tracing, configure_tracing
from petstore_gateway.app import create_app
from petstore_gateway.settings import GatewaySettings

from .backend import Backend


@pytest.fixture
def tracing() -> Iterator[tuple[Tracing, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    tracing = configure_tracing("gateway", {"OTEL_TRACING": "1"}, exporter=exporter)
    assert tracing is not None
    try:
        yield tracing, exporter
    finally:
        tracing.shutdown()


async def test_a_request_is_a_server_span_with_its_service_call_inside(
    settings: GatewaySettings,
    backend: Backend,  # started before tracing: its servers and staff channels make no spans
    tracing: tuple[Tracing, InMemorySpanExporter],
) -> None:
    on, spans = tracing
    await backend.add_pet(1, "rex")
    # Channels made after configure_tracing carry the client instrumentation.
    clients = backend.clients()
    app = create_app(settings, clients=clients)
    on.instrument_app(app)
    try:
        async with TestClient(TestServer(app)) as client:
            assert (await client.get("/v2/pet/1")).status == 200
            assert (await client.get("/livez")).status == 200  # probes are not traced
    finally:
        await clients.close()
    finished = spans.get_finished_spans()
    server = [span for span in finished if span.kind is trace.SpanKind.SERVER]
    # The pet cache's WatchPets stream runs beside the requests, in traces of its own.
    calls = [
        span
        for span in finished
        if span.kind is trace.SpanKind.CLIENT and span.name != "/petstore.pet.v1.PetService/WatchPets"
    ]
    assert [span.name for span in server] == ["GET /v2/pet/{petId}"]
    assert server[0].attributes is not None
    assert (
        server[0].attributes.get("http.status_code", server[0].attributes.get("http.response.status_code"))
        == 200
    )
    assert server[0].resource.attributes["service.name"] == "gateway"
    assert [span.name for span in calls] == ["/petstore.pet.v1.PetService/GetPet"]
    assert calls[0].parent is not None
    assert server[0].context is not None
    assert calls[0].parent.span_id == server[0].context.span_id


def test_off_no_tracer_provider_is_set() -> None:
    assert configure_tracing("gateway", {}) is None
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
