"""Bootstrap shared by the gRPC services: server factory, health, interceptor, graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from google.protobuf.descriptor_pb2 import MethodOptions
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import Counter, Histogram
from pymongo.errors import ConnectionFailure, PyMongoError

from petstore_common.caller_gate import CallerGate
from petstore_common.database_events import DatabaseEvents
from petstore_common.diagnostics import STOP_MARGIN_SECONDS, dump_stacks_on_signal, exit_after, task_stacks
from petstore_common.errors import InvalidArgument, ServiceError, Unauthenticated
from petstore_common.grpc_client import HEALTH_METHOD_PREFIX, WRITES_HEALTH_SUFFIX, idempotency_level
from petstore_common.logging import RequestLog, configure_logging
from petstore_common.metrics import start_metrics_server
from petstore_common.request_context import (
    REQUEST_ID_METADATA_KEY,
    current_request_id,
    sanitize_request_id,
)
from petstore_common.request_validation import RequestValidator
from petstore_common.settings import HasServiceSettings, ServiceSettings, SettingsError
from petstore_common.storage_faults import WRITES_REFUSED, WriteHealth, storage_fault
from petstore_common.tracing import configure_tracing

log = logging.getLogger(__name__)
rpc_log = RequestLog(__name__, "rpc")
"""One line per RPC served (health probes aside)."""

HEALTH_CHECK_INTERVAL_SECONDS = 2.0
"""How often a serving service checks its database (a check taking longer counts as failed)."""
TASKS_STOP_SECONDS = 1.0
"""How long a stop waits for the health watch, the guard and background work to end."""
CHECK_HUNG_SECONDS = 5.0
"""A readiness check still running after this is hung: the driver fails one whose database is
away within its own timeouts (MONGODB_TIMEOUT_MS, 2 s by default)."""
STUCK_AFTER_SECONDS = 10.0
"""A service NOT_SERVING this long checks its database itself; answering, the service is stuck
and exits (EXIT_STUCK) to be restarted. Any real outage's recheck would have ended it by then."""
GUARD_INTERVAL_SECONDS = 1.0
EXIT_STUCK = 75
"""The exit status of a service that found itself stuck NOT_SERVING (EX_TEMPFAIL)."""
RECHECK_INTERVAL_SECONDS = 0.25
"""How often a service that is NOT_SERVING checks again: it is back in its callers' turn (their
health watches hear SERVING at once) within this of its database answering again."""
MAX_CONNECTION_AGE_GRACE_SECONDS = 10.0
"""How long an aged-out connection keeps serving the calls already on it: longer than any
caller's deadline (the gateway's is 5 s), so no call is cut by a connection ageing."""
SHUTDOWN_NOTICE_SECONDS = 0.5
"""Between NOT_SERVING and refusing new RPCs: the clients' health watches take the replica out
of their round_robin turn first, so no call is picked for a server that already refuses it
(a rolling update under load lost one call in 600 without it, `make e2e-k8s`; stopping one of
two replicas under load lost a call in 2 runs of 8, common/common_tests/test_grpc_client.py)."""

RPC_HANDLED = Counter(
    "grpc_server_handled_total", "RPCs completed, by method and status code.", ["grpc_method", "grpc_code"]
)
RPC_SECONDS = Histogram(
    "grpc_server_handling_seconds",
    "Time spent serving an RPC, by method.",
    ["grpc_method"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)


@dataclass(frozen=True, slots=True)
class ServiceDefinition:
    """What a service contributes to the shared server: its servicer and a readiness probe."""

    name: str
    """Full gRPC service name, e.g. "petstore.pet.v1.PetService" (reported by health)."""
    register: Callable[[grpc.aio.Server], None]
    """Adds the servicer(s) to the server."""
    check_ready: Callable[[], Awaitable[None]]
    """Raises when a dependency the service needs (its database) is unreachable."""
    on_stop: Callable[[], Awaitable[None]] | None = None
    """Called when stopping, before in-flight calls drain: ends long-lived streams, which
    would otherwise hold the stop for the whole grace period."""
    validator: RequestValidator = field(default_factory=RequestValidator)
    """Checks every request against its message's field rules before the servicer sees it;
    the service gives it the client's names for its fields."""
    database_events: DatabaseEvents | None = None
    """The driver's heartbeats of the service's database: a failed one turns it NOT_SERVING at
    once (StoreReadiness.events; None for the embedded store)."""
    background: Callable[[], Coroutine[Any, Any, None]] | None = None
    """Work the service does while it serves, apart from calls (the order service's recovery of
    unfinished sales): started with the server, cancelled when it stops."""
    polled_methods: frozenset[str] = frozenset()
    """Methods ("/package.Service/Method") another service calls on a timer (the webhook
    service reading the event outboxes, about once a second): their successful calls are
    counted in the metrics but not logged, as health probes are not; a failed one is logged."""


SettingsT = TypeVar("SettingsT", bound=HasServiceSettings)
ServiceFactory = Callable[[SettingsT], AbstractAsyncContextManager[ServiceDefinition]]
"""Opens the service's resources (database client, channels) from its own settings, and closes
them on exit."""


class CheckOutcome(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    HUNG = "check hung"


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Marks a given-up task's outcome as seen (no "exception never retrieved")."""
    if not task.cancelled():
        task.exception()


def _exit_stuck(lasted: float) -> None:
    count, stacks = task_stacks()
    log.error(
        "NOT_SERVING while the database answers: exiting to be restarted",
        extra={"not_serving_seconds": round(lasted, 1), "tasks": count, "stacks": stacks},
    )
    os._exit(EXIT_STUCK)


class Readiness:
    """The health a service reports, for "" and for its own name: kept in step with its
    database by a periodic check, and NOT_SERVING at once when a call finds the database gone
    (callers then stop sending it calls that would fail slowly), until a check passes again."""

    def __init__(self, definition: ServiceDefinition, servicer: health.aio.HealthServicer) -> None:
        self._definition = definition
        self._servicer = servicer
        self._recheck = asyncio.Event()
        self.status: int | None = None
        self._since = time.monotonic()
        """When the status last changed."""
        self._reports: set[asyncio.Task[None]] = set()
        self._last_error: BaseException | None = None
        self._checking: asyncio.Future[Any] | None = None
        """The readiness check in flight, shared by the watch and the guard."""
        self.writes = WriteHealth(self._report_writes)
        """Whether the database refuses writes for lack of storage (petstore_common.storage_faults)."""

    async def _report_writes(self, failing: bool) -> None:
        serving = health_pb2.HealthCheckResponse
        status = serving.NOT_SERVING if failing else serving.SERVING
        await self._servicer.set(self._definition.name + WRITES_HEALTH_SUFFIX, status)

    async def report(self, status: int) -> None:
        if status == self.status:
            return
        if status == health_pb2.HealthCheckResponse.SERVING and self.status is not None:
            log.info("ready again", extra={"not_ready_seconds": round(time.monotonic() - self._since, 2)})
        self.status = status
        self._since = time.monotonic()
        for name in ("", self._definition.name):
            await self._servicer.set(name, status)

    async def guard(self, on_stuck: Callable[[float], None] = _exit_stuck) -> None:
        """Ends a NOT_SERVING that should not last: once it has lasted STUCK_AFTER_SECONDS, the
        database is checked once more, and if that check passes (the watch that should have
        said so is stuck) or does not even fail in time (the driver itself is stuck: a lost
        database fails its check within the driver's timeout), `on_stuck` (by default: log the
        task stacks and exit, so the supervisor restarts the service rather than it answering
        nothing for ever)."""
        while True:
            await asyncio.sleep(GUARD_INTERVAL_SECONDS)
            if self.status != health_pb2.HealthCheckResponse.NOT_SERVING:
                continue
            lasted = time.monotonic() - self._since
            if lasted < STUCK_AFTER_SECONDS:
                continue
            outcome = await self._check()
            still_not_serving = self.status == health_pb2.HealthCheckResponse.NOT_SERVING
            if outcome is not CheckOutcome.FAILED and still_not_serving:
                on_stuck(lasted)

    async def _check(self) -> CheckOutcome:
        """The service's readiness check, waited for at most CHECK_HUNG_SECONDS and never
        cancelled: a check still running is waited for again
        rather than another started, so a hung driver holds one check, not one per interval.
        (A cancellation inside the driver is what can wedge it: petstore_common.driver_waits.)"""
        if self._checking is None or self._checking.done():
            self._checking = asyncio.ensure_future(self._definition.check_ready())
            self._checking.add_done_callback(_retrieve)
        check = self._checking
        done, _ = await asyncio.wait({check}, timeout=CHECK_HUNG_SECONDS)
        if not done:
            log.warning("database check hung", extra={"seconds": CHECK_HUNG_SECONDS})
            return CheckOutcome.HUNG
        if check.cancelled():  # the driver gave up on it: no answer is a failed check
            self._last_error = asyncio.CancelledError()
            return CheckOutcome.FAILED
        error = check.exception()
        if error is not None:
            self._last_error = error
            return CheckOutcome.FAILED
        return CheckOutcome.PASSED

    async def database_lost(self, error: BaseException) -> None:
        """A call failed to reach the database: NOT_SERVING now, and check again at once."""
        if self.status != health_pb2.HealthCheckResponse.NOT_SERVING:
            log.warning("not ready", extra={"error": type(error).__name__, "seen_by": "call"})
            await self.report(health_pb2.HealthCheckResponse.NOT_SERVING)
        self._recheck.set()

    def _heard(self, reachable: bool) -> None:
        """From the driver's heartbeats: NOT_SERVING at a failed one; check again either way."""
        if not reachable and self.status != health_pb2.HealthCheckResponse.NOT_SERVING:
            task = asyncio.get_running_loop().create_task(self._heartbeat_failed())
            self._reports.add(task)
            task.add_done_callback(self._reports.discard)
        self._recheck.set()

    async def _heartbeat_failed(self) -> None:
        if self.status != health_pb2.HealthCheckResponse.NOT_SERVING:
            log.warning("not ready", extra={"error": "heartbeat failed", "seen_by": "heartbeat"})
            await self.report(health_pb2.HealthCheckResponse.NOT_SERVING)

    async def watch(self) -> None:
        """Keep the health status in step with the service's dependencies."""
        if self._definition.database_events is not None:
            self._definition.database_events.subscribe(self._heard)
        while True:
            self._recheck.clear()  # a call failing during the check asks for another
            outcome = await self._check()
            status: int = health_pb2.HealthCheckResponse.SERVING
            if outcome is not CheckOutcome.PASSED:  # any failure to reach a dependency
                status = health_pb2.HealthCheckResponse.NOT_SERVING
                if self.status != status:
                    error = outcome.value if outcome is CheckOutcome.HUNG else type(self._last_error).__name__
                    log.warning("not ready", extra={"error": error})
            await self.report(status)
            serving = status == health_pb2.HealthCheckResponse.SERVING
            interval = HEALTH_CHECK_INTERVAL_SECONDS if serving else RECHECK_INTERVAL_SECONDS
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._recheck.wait()


class RequestInterceptor(grpc.aio.ServerInterceptor):
    """Per unary call: request id from metadata, the caller token checked (`gate`), the
    request's field rules checked, domain errors to statuses, logs and metrics. Per
    server-streaming call: the caller token and the request's field rules."""

    def __init__(
        self,
        gate: CallerGate,
        readiness: Readiness | None = None,
        validator: RequestValidator | None = None,
        *,
        polled_methods: frozenset[str] = frozenset(),
    ) -> None:
        self._gate = gate
        self._readiness = readiness
        self._validator = validator or RequestValidator()
        self._polled = polled_methods

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method: str = handler_call_details.method
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _observed(
                    method,
                    handler.unary_unary,
                    self._gate,
                    self._readiness,
                    self._validator,
                    polled=method in self._polled,
                ),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        # Health's Watch writes through its context rather than yielding, and has no rules. No
        # service has client-streaming methods: one added would need the caller gate here too.
        if handler.unary_stream is not None and not method.startswith(HEALTH_METHOD_PREFIX):
            return grpc.unary_stream_rpc_method_handler(
                _validated_stream(method, handler.unary_stream, self._gate, self._validator),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


def _validated_stream(
    method: str, behaviour: Callable[..., Any], gate: CallerGate, validator: RequestValidator
) -> Callable[..., AsyncIterator[Any]]:
    async def stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        try:
            gate.check(method, context.invocation_metadata(), request)
            validator.check(request)
        except (Unauthenticated, InvalidArgument) as exc:
            await context.abort(exc.code, exc.message, exc.trailing_metadata())
        async for response in behaviour(request, context):
            yield response

    return stream


def _is_write(method: str) -> bool:
    """Anything but a read marked in its proto (NO_SIDE_EFFECTS) and a health probe."""
    read = idempotency_level(method) == MethodOptions.NO_SIDE_EFFECTS
    return not read and not method.startswith(HEALTH_METHOD_PREFIX)


def _observed(
    method: str,
    behaviour: Callable[..., Any],
    gate: CallerGate,
    readiness: Readiness | None = None,
    validator: RequestValidator | None = None,
    *,
    polled: bool = False,
) -> Callable[..., Awaitable[Any]]:
    async def call(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        pairs = context.invocation_metadata() or ()
        raw_id = dict(pairs).get(REQUEST_ID_METADATA_KEY)
        token = current_request_id.set(sanitize_request_id(raw_id if isinstance(raw_id, str) else None))
        started = time.perf_counter()
        code = grpc.StatusCode.OK
        try:
            gate.check(method, pairs, request)  # an Unauthenticated, answered below
            if validator is not None:
                validator.check(request)  # an InvalidArgument, answered below like the servicer's
            response = await behaviour(request, context)
            if readiness is not None and readiness.writes.failing and _is_write(method):
                await readiness.writes.written()  # a write went through: the outage is over
            return response
        except ServiceError as exc:
            code = exc.code
            await context.abort(code, exc.message, exc.trailing_metadata())
        except (ConnectionFailure, PyMongoError) as exc:
            # The database is gone or refused: a condition callers may retry, never a 500.
            code = grpc.StatusCode.UNAVAILABLE
            cause = storage_fault(exc)
            if cause is not None and readiness is not None:  # it answers, but stores nothing
                await readiness.writes.refused(cause, exc, method=method)
                await context.abort(code, WRITES_REFUSED)
            log.warning("database error", extra={"grpc_method": method, "error": type(exc).__name__})
            if readiness is not None and isinstance(exc, ConnectionFailure):  # gone, not refused
                await readiness.database_lost(exc)
            await context.abort(code, "the database is unavailable")
        except asyncio.CancelledError:
            code = grpc.StatusCode.CANCELLED
            raise
        except Exception:
            if context.code() not in (None, grpc.StatusCode.OK):
                code = context.code()  # the servicer aborted on purpose
                raise
            code = grpc.StatusCode.INTERNAL
            log.exception("unhandled error", extra={"grpc_method": method})
            await context.abort(code, "internal error")
        finally:
            elapsed = time.perf_counter() - started
            RPC_HANDLED.labels(method, code.name).inc()
            RPC_SECONDS.labels(method).observe(elapsed)
            # Probes and successful polls would drown the log.
            if not method.startswith(HEALTH_METHOD_PREFIX) and not (polled and code == grpc.StatusCode.OK):
                rpc_log.write(grpc_method=method, grpc_code=code.name, ms=round(elapsed * 1000, 2))
            current_request_id.reset(token)

    return call


@dataclass
class RunningService:
    server: grpc.aio.Server
    port: int
    health: health.aio.HealthServicer
    _watchdog: asyncio.Task[None]
    _on_stop: Callable[[], Awaitable[None]] | None = None
    _background: asyncio.Task[None] | None = None
    _guard: asyncio.Task[None] | None = None

    async def stop(self, grace: float | None) -> None:
        """Report NOT_SERVING, let in-flight RPCs finish within `grace`, then stop."""
        tasks = {task for task in (self._watchdog, self._guard, self._background) if task is not None}
        for task in tasks:
            task.cancel()
        # Not `await task`: one that swallows its cancellation would hold the stop for ever.
        await asyncio.wait(tasks, timeout=TASKS_STOP_SECONDS)
        for task in tasks:
            task.add_done_callback(_retrieve)
        await self.health.enter_graceful_shutdown()
        if grace:
            # Clients watching health hear NOT_SERVING at once, but a call they had already
            # picked this replica for can still arrive; once the server stops, such a call is
            # CANCELLED (a 503 at the gateway). A moment's notice lets them all go elsewhere.
            await asyncio.sleep(min(SHUTDOWN_NOTICE_SECONDS, grace))
        if self._on_stop is not None:
            await self._on_stop()
        await self.server.stop(grace)


NO_PORT_SHARING: tuple[tuple[str, int], ...] = (("grpc.so_reuseport", 0),)
"""Server arguments every gRPC server here uses, tests' fakes included. gRPC sets SO_REUSEPORT
by default, so a second server (or a port-0 bind in a test) can silently share a port that
another process or test server already listens on, and calls land on the wrong one
(grpc/grpc#10755). Without it a taken port is an error."""


def server_options(settings: ServiceSettings) -> list[tuple[str, int]]:
    """Channel arguments of the server. A maximum connection age makes clients reconnect now
    and then: each time they re-resolve the service's name (every replica behind a headless
    Service or compose's DNS) and their round_robin policy reaches replicas that are new."""
    options = list(NO_PORT_SHARING)
    if settings.max_connection_age_seconds > 0:
        options += [
            ("grpc.max_connection_age_ms", int(settings.max_connection_age_seconds * 1000)),
            ("grpc.max_connection_age_grace_ms", int(MAX_CONNECTION_AGE_GRACE_SECONDS * 1000)),
        ]
    return options


async def start_service(
    definition: ServiceDefinition,
    settings: ServiceSettings,
    *,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> RunningService:
    """Start serving `definition` on settings.listen_addr (port 0 picks one); returns the port.
    `interceptors` see each call before the shared one does: tests observe calls with them.
    SettingsError when the settings trust no caller but require caller tokens."""
    settings.check_caller_trust()
    gate = CallerGate(settings.trusted_caller_keys, settings.caller_tokens)
    health_servicer = health.aio.HealthServicer()
    readiness = Readiness(definition, health_servicer)
    server = grpc.aio.server(
        interceptors=[
            *interceptors,
            RequestInterceptor(
                gate, readiness, definition.validator, polled_methods=definition.polled_methods
            ),
        ],
        maximum_concurrent_rpcs=settings.max_concurrent_rpcs,
        options=server_options(settings),
    )
    definition.register(server)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_insecure_port(settings.listen_addr)
    await health_servicer.set(definition.name + WRITES_HEALTH_SUFFIX, health_pb2.HealthCheckResponse.SERVING)
    await server.start()
    watchdog = asyncio.create_task(readiness.watch())
    guard = asyncio.create_task(readiness.guard())
    background: asyncio.Task[None] | None = None
    if definition.background is not None:
        background = asyncio.create_task(definition.background())
    return RunningService(server, port, health_servicer, watchdog, definition.on_stop, background, guard)


def run_service(
    name: str, read_settings: Callable[[], SettingsT], factory: ServiceFactory[SettingsT]
) -> None:
    """`python -m <service>`, the same for every service: read its settings (exit 2 naming what
    is wrong, without a traceback), log as `name`, serve until SIGTERM or SIGINT."""
    try:
        settings = read_settings()
        settings.service.check_caller_trust()
    except SettingsError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(name, settings.service.log_level)
    asyncio.run(serve(factory, settings, service_name=name))


async def serve(factory: ServiceFactory[SettingsT], own: SettingsT, *, service_name: str) -> None:
    """Run a service until SIGTERM or SIGINT, then stop gracefully (traced as `service_name`
    when OTEL_TRACING=1)."""
    settings = own.service
    tracing = configure_tracing(service_name, os.environ)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    dump_stacks_on_signal(loop)
    start_metrics_server(settings.metrics_port)
    async with factory(own) as definition:
        running = await start_service(definition, settings)
        log.info("serving", extra={"grpc_service": definition.name, "port": running.port})
        await stop.wait()
        log.info("stopping", extra={"grace_seconds": settings.grace_seconds})
        stop_deadline = exit_after(settings.grace_seconds + STOP_MARGIN_SECONDS)  # whatever the drain does
        await running.stop(settings.grace_seconds)
    stop_deadline.done()
    if tracing is not None:
        tracing.shutdown()  # flushes the spans still queued
    log.info("stopped")
