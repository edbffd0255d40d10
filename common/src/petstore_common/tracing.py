"""Optional OpenTelemetry tracing, switched on by OTEL_TRACING=1, for the gateway and the services.

Off (the default) nothing from OpenTelemetry is imported and no exporter runs. On, before
any server or channel exists, this:

- makes a tracer provider whose resource has `service.name` (OTEL_SERVICE_NAME and
  OTEL_RESOURCE_ATTRIBUTES still apply, as the SDK reads them);
- exports spans in batches over OTLP/HTTP; where to is the exporter's standard variables
  (OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318, or
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), sampling the SDK's (OTEL_TRACES_SAMPLER);
- instruments grpc.aio servers and channels (health checks left out), and readies the
  aiohttp server instrumentation where it is installed (the gateway): `Tracing.instrument_app(app)`
  then puts its middleware first in an application (the probes left out unless
  OTEL_PYTHON_AIOHTTP_SERVER_EXCLUDED_URLS says otherwise).

W3C trace context travels in the HTTP headers and the gRPC metadata, so one request is one
trace across the processes. The provider is handed to the instrumentations rather than
installed globally, and `Tracing.shutdown()` undoes all of it.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

TRACING_SWITCH = "OTEL_TRACING"
_ON = frozenset({"1", "true", "yes", "on"})
AIOHTTP_EXCLUDED_URLS = "OTEL_PYTHON_AIOHTTP_SERVER_EXCLUDED_URLS"
UNTRACED_PATHS = "/livez,/readyz"  # /metrics is served on METRICS_PORT, outside the app


def tracing_enabled(env: Mapping[str, str]) -> bool:
    return env.get(TRACING_SWITCH, "").strip().lower() in _ON


class Tracing:
    """Tracing as configure_tracing turned it on."""

    def __init__(self, provider: TracerProvider, instrumentors: Sequence[Any]) -> None:
        self.provider = provider
        self._instrumentors = tuple(instrumentors)

    def instrument_app(self, app: web.Application) -> None:
        """Trace every request `app` serves: a server span around all its other middlewares."""
        from opentelemetry.instrumentation.aiohttp_server import create_aiohttp_middleware

        app.middlewares.insert(0, create_aiohttp_middleware(tracer_provider=self.provider))

    def shutdown(self) -> None:
        """Undo the instrumentation, then flush and stop the exporter."""
        for instrumentor in reversed(self._instrumentors):
            instrumentor.uninstrument()
        self.provider.shutdown()


def configure_tracing(
    service_name: str, env: Mapping[str, str], *, exporter: SpanExporter | None = None
) -> Tracing | None:
    """Turn tracing on when `env` has OTEL_TRACING=1 (true, yes, on); else do nothing, return None.

    `exporter` replaces the OTLP exporter (tests pass an in-memory one; spans then go out one
    by one, synchronously). Call it before creating servers, channels or the aiohttp app.
    """
    if not tracing_enabled(env):
        return None
    # Imported only now: a process with tracing off never loads OpenTelemetry.
    from opentelemetry.instrumentation.grpc import (
        GrpcAioInstrumentorClient,
        GrpcAioInstrumentorServer,
        filters,
    )
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))

    not_health = filters.negate(filters.health_check())
    instrumentors: list[Any] = [
        GrpcAioInstrumentorServer(filter_=not_health),  # type: ignore[no-untyped-call]
        GrpcAioInstrumentorClient(filter_=not_health),  # type: ignore[no-untyped-call]
    ]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    if _installed("aiohttp") and _installed("opentelemetry.instrumentation.aiohttp_server"):
        instrumentors.append(_ready_aiohttp(provider))
    return Tracing(provider, instrumentors)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def _ready_aiohttp(provider: TracerProvider) -> Any:
    """Set up what the aiohttp middleware reads (its exclusions, its meters) without the
    instrumentor's swap of `web.Application` for a subclass: aiohttp deprecates subclassing it,
    the subclass cannot take a tuple of middlewares, and instrument_app says the same plainly."""
    from aiohttp import web
    from opentelemetry.instrumentation.aiohttp_server import AioHttpServerInstrumentor

    os.environ.setdefault(AIOHTTP_EXCLUDED_URLS, UNTRACED_PATHS)  # read from the process environment
    application = web.Application
    instrumentor = AioHttpServerInstrumentor()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Inheritance class", DeprecationWarning)
        instrumentor.instrument(tracer_provider=provider)
    web.Application = application  # type: ignore[misc]
    return instrumentor
