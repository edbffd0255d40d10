"""The shared server bootstrap: status mapping, request ids, health, graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest
from google.rpc.error_details_pb2 import BadRequest
from google.rpc.status_pb2 import Status
from grpc_health.v1 import health, health_pb2
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError

from petstore.pet.v1 import pet_service_pb2
from petstore_common import grpc_server
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.errors import InvalidArgument, NotFound
from petstore_common.field_violations import STATUS_DETAILS_KEY, FieldViolation
from petstore_common.grpc_client import WRITES_HEALTH_SUFFIX, health_status, is_serving
from petstore_common.grpc_server import (
    HEALTH_CHECK_INTERVAL_SECONDS,
    RECHECK_INTERVAL_SECONDS,
    RunningService,
    ServiceDefinition,
    start_service,
)
from petstore_common.request_context import NO_REQUEST_ID, current_request_id
from petstore_common.request_validation import RequestValidator
from petstore_common.settings import ServiceSettings
from petstore_common.storage_faults import WRITES_REFUSED
from petstore_devstack.doc_tables import documentation_words

SERVICE = "test.v1.EchoService"
seen_request_ids: list[str] = []


async def _echo(request: bytes, context: Any) -> bytes:
    seen_request_ids.append(current_request_id.get())
    return request


async def _missing(request: bytes, context: Any) -> bytes:
    raise NotFound("thing 7 not found")


async def _field_refused(request: bytes, context: Any) -> bytes:
    raise InvalidArgument("quantity is required", violation=FieldViolation.required("order.quantity"))


async def _db_down(request: bytes, context: Any) -> bytes:
    raise ServerSelectionTimeoutError("no servers")


async def _disk_full(request: bytes, context: Any) -> bytes:
    raise OperationFailure("[msg_insert.go:168] database or disk is full (13)", code=1)  # FerretDB's words


async def _bug(request: bytes, context: Any) -> bytes:
    raise ZeroDivisionError("secret internals")


async def _slow(request: bytes, context: Any) -> bytes:
    await asyncio.sleep(0.5)
    return b"done"


def _register(server: grpc.aio.Server) -> None:
    behaviours = {
        "Echo": _echo,
        "Missing": _missing,
        "FieldRefused": _field_refused,
        "DbDown": _db_down,
        "DiskFull": _disk_full,
        "Bug": _bug,
        "Slow": _slow,
    }
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        name: grpc.unary_unary_rpc_method_handler(fn) for name, fn in behaviours.items()
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))


class Readiness:
    ready = True

    async def check(self) -> None:
        if not self.ready:
            raise ConnectionError("database unreachable")


@pytest.fixture
def readiness() -> Readiness:
    return Readiness()


@pytest.fixture
async def running(readiness: Readiness) -> AsyncIterator[RunningService]:
    settings = ServiceSettings.from_env(
        default_port=0, default_database="t", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    service = await start_service(ServiceDefinition(SERVICE, _register, readiness.check), settings)
    try:
        yield service
    finally:
        await service.stop(None)


@pytest.fixture
async def call(running: RunningService) -> AsyncIterator[Callable[[str], Awaitable[bytes]]]:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:

        async def invoke(method: str) -> bytes:
            stub: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{SERVICE}/{method}")
            result: bytes = await stub(b"ping", timeout=5)
            return result

        yield invoke


@pytest.mark.parametrize(
    ("method", "code", "message"),
    [
        ("Missing", grpc.StatusCode.NOT_FOUND, "thing 7 not found"),
        ("DbDown", grpc.StatusCode.UNAVAILABLE, "the database is unavailable"),
        ("Bug", grpc.StatusCode.INTERNAL, "internal error"),
    ],
)
async def test_errors_become_statuses_with_safe_messages(
    call: Callable[[str], Awaitable[bytes]], method: str, code: grpc.StatusCode, message: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(method)
    assert caught.value.code() == code
    assert caught.value.details() == message


async def test_the_callers_request_id_reaches_the_handler(call: Callable[[str], Awaitable[bytes]]) -> None:
    token = current_request_id.set("trace-42")
    try:
        assert await call("Echo") == b"ping"
    finally:
        current_request_id.reset(token)
    assert seen_request_ids[-1] == "trace-42"


async def test_a_call_outside_any_request_gets_a_fresh_id(call: Callable[[str], Awaitable[bytes]]) -> None:
    await call("Echo")
    assert seen_request_ids[-1] not in ("", NO_REQUEST_ID)
    assert len(seen_request_ids[-1]) == 32


async def test_health_follows_readiness(running: RunningService, readiness: Readiness) -> None:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        assert await is_serving(channel, SERVICE)
        readiness.ready = False
        for _ in range(50):
            if not await is_serving(channel, SERVICE):
                break
            await asyncio.sleep(0.1)
        assert not await is_serving(channel, "")


async def test_a_call_that_finds_the_database_gone_turns_health_at_once(
    running: RunningService, readiness: Readiness, call: Callable[[str], Awaitable[bytes]]
) -> None:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        assert await is_serving(channel, SERVICE)  # checked: the next check is 2 s away
        readiness.ready = False
        with pytest.raises(grpc.aio.AioRpcError):
            await call("DbDown")

        assert not await is_serving(channel, SERVICE)
        assert not await is_serving(channel, "")


async def test_a_service_back_in_health_serves_within_a_second(
    running: RunningService, readiness: Readiness, call: Callable[[str], Awaitable[bytes]]
) -> None:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        readiness.ready = False
        with pytest.raises(grpc.aio.AioRpcError):
            await call("DbDown")
        await asyncio.sleep(HEALTH_CHECK_INTERVAL_SECONDS)  # a check failed on its own too
        assert not await is_serving(channel, SERVICE)

        readiness.ready = True
        back = time.monotonic()
        while not await is_serving(channel, SERVICE):
            assert time.monotonic() - back < 1.0, "still NOT_SERVING a second after its database came back"
            await asyncio.sleep(0.05)
        assert await call("Echo") == b"ping"


async def test_a_full_disk_refuses_writes_keeps_the_service_ready_and_says_so(
    running: RunningService, call: Callable[[str], Awaitable[bytes]]
) -> None:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        writes = SERVICE + WRITES_HEALTH_SUFFIX
        assert await health_status(channel, writes) == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call("DiskFull")
        assert (caught.value.code(), caught.value.details()) == (grpc.StatusCode.UNAVAILABLE, WRITES_REFUSED)

        assert await is_serving(channel, SERVICE)  # reads work: it stays in its callers' turn
        assert await health_status(channel, writes) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert await call("Echo") == b"ping"  # a write that goes through ends the outage
        assert await health_status(channel, writes) == health_pb2.HealthCheckResponse.SERVING


async def test_a_service_stuck_not_serving_while_its_database_answers_gives_up(
    readiness: Readiness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grpc_server, "STUCK_AFTER_SECONDS", 0.3)
    monkeypatch.setattr(grpc_server, "GUARD_INTERVAL_SECONDS", 0.05)
    definition = ServiceDefinition(SERVICE, _register, readiness.check)
    stuck = grpc_server.Readiness(definition, health.aio.HealthServicer())
    gave_up: list[float] = []
    await stuck.report(health_pb2.HealthCheckResponse.NOT_SERVING)  # and no watch to end it
    readiness.ready = False
    guard = asyncio.create_task(stuck.guard(gave_up.append))
    try:
        await asyncio.sleep(0.6)
        assert gave_up == []  # the database is away: NOT_SERVING is right
        readiness.ready = True
        await asyncio.sleep(0.3)
        assert gave_up
        assert gave_up[0] >= 0.3
    finally:
        guard.cancel()


async def test_graceful_stop_lets_in_flight_calls_finish(running: RunningService) -> None:
    async with signed_channel(f"127.0.0.1:{running.port}") as channel:
        slow: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{SERVICE}/Slow")

        async def call_slow() -> bytes:
            result: bytes = await slow(b"", timeout=5)
            return result

        in_flight = asyncio.create_task(call_slow())
        await asyncio.sleep(0.1)
        await running.stop(grace=2)
        assert await in_flight == b"done"


class MethodRecorder(grpc.aio.ServerInterceptor):
    """Remembers the method of every call that reaches the server."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        self.methods.append(handler_call_details.method)
        return await continuation(handler_call_details)


async def test_interceptors_given_see_every_call_and_the_shared_one_still_maps_errors() -> None:
    recorder = MethodRecorder()
    settings = ServiceSettings.from_env(
        default_port=0, default_database="t", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    definition = ServiceDefinition(SERVICE, _register, Readiness().check)
    service = await start_service(definition, settings, interceptors=[recorder])
    try:
        async with signed_channel(f"127.0.0.1:{service.port}") as channel:
            missing: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]
            missing = channel.unary_unary(f"/{SERVICE}/Missing")
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await missing(b"", timeout=5)
    finally:
        await service.stop(None)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert f"/{SERVICE}/Missing" in recorder.methods


class HeldReadiness:
    """A readiness check that answers only when the test says so."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[None] | None = None

    async def check(self) -> None:
        self.answer = asyncio.get_running_loop().create_future()
        await self.answer


async def test_stop_ends_the_health_watch_even_as_a_check_returns() -> None:
    readiness = HeldReadiness()
    settings = ServiceSettings.from_env(
        default_port=0, default_database="t", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    service = await start_service(ServiceDefinition(SERVICE, _register, readiness.check), settings)
    for _ in range(100):
        if readiness.answer is not None:
            break
        await asyncio.sleep(0.01)
    assert readiness.answer is not None
    readiness.answer.set_result(None)  # the check returns in the very turn the stop comes
    stopping = asyncio.create_task(service.stop(None))
    done, _ = await asyncio.wait([stopping], timeout=3)
    assert stopping in done


def test_the_readme_states_how_often_an_unhealthy_service_checks_again() -> None:
    readme = documentation_words()
    assert f"checks again every {RECHECK_INTERVAL_SECONDS:g} s" in readme
    assert f"checked every {HEALTH_CHECK_INTERVAL_SECONDS:g} s" in readme


# ---------------------------------------------------------------------------------------
# Every request is checked against its message's field rules before the handler runs

RULED = "test.v1.RuledService"
FindRequest = pet_service_pb2.FindExistingPetsRequest
FindResponse = pet_service_pb2.FindExistingPetsResponse
handled: list[FindRequest] = []


async def _find(request: FindRequest, context: Any) -> FindResponse:
    handled.append(request)
    return FindResponse(ids=request.ids)


async def _watch(request: FindRequest, context: Any) -> AsyncIterator[FindResponse]:
    handled.append(request)
    for pet_id in request.ids:
        yield FindResponse(ids=[pet_id])


def _register_ruled(server: grpc.aio.Server) -> None:
    codec: dict[str, Any] = {
        "request_deserializer": FindRequest.FromString,
        "response_serializer": FindResponse.SerializeToString,
    }
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "Find": grpc.unary_unary_rpc_method_handler(_find, **codec),
        "Watch": grpc.unary_stream_rpc_method_handler(_watch, **codec),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(RULED, handlers),))


@pytest.fixture
async def ruled(readiness: Readiness) -> AsyncIterator[grpc.aio.Channel]:
    settings = ServiceSettings.from_env(
        default_port=0, default_database="t", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    validator = RequestValidator(field_names={"petstore.pet.v1.FindExistingPetsRequest.ids": "petIds"})
    definition = ServiceDefinition(RULED, _register_ruled, readiness.check, validator=validator)
    service = await start_service(definition, settings)
    handled.clear()
    try:
        async with signed_channel(f"127.0.0.1:{service.port}") as channel:
            yield channel
    finally:
        await service.stop(None)


async def test_a_request_breaking_its_rules_is_invalid_argument_before_the_handler_runs(
    ruled: grpc.aio.Channel,
) -> None:
    find = ruled.unary_unary(
        f"/{RULED}/Find",
        request_serializer=FindRequest.SerializeToString,
        response_deserializer=FindResponse.FromString,
    )
    assert list((await find(FindRequest(ids=[3, 4]), timeout=5)).ids) == [3, 4]

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await find(FindRequest(ids=[3, 0]), timeout=5)

    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == "petIds[1]: must be positive"  # the service's name for the field
    assert handled == [FindRequest(ids=[3, 4])]


async def test_a_streaming_request_is_checked_too(ruled: grpc.aio.Channel) -> None:
    watch = ruled.unary_stream(
        f"/{RULED}/Watch",
        request_serializer=FindRequest.SerializeToString,
        response_deserializer=FindResponse.FromString,
    )
    assert [list(r.ids) async for r in watch(FindRequest(ids=[3, 4]), timeout=5)] == [[3], [4]]

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in watch(FindRequest(), timeout=5):
            pass

    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == "petIds: must not be empty"
    assert handled == [FindRequest(ids=[3, 4])]


def _bad_request(error: grpc.aio.AioRpcError) -> tuple[int, str, list[tuple[str, str, str]]]:
    """The google.rpc.Status an error carries: its code, message and field violations, read with
    the public protobuf API from the `grpc-status-details-bin` trailer."""
    trailer = dict(error.trailing_metadata() or ())[STATUS_DETAILS_KEY]
    assert isinstance(trailer, bytes)
    status = Status.FromString(trailer)
    (detail,) = status.details
    bad_request = BadRequest()
    assert detail.Unpack(bad_request)
    violations = [(v.field, v.reason, v.description) for v in bad_request.field_violations]
    return status.code, status.message, violations


async def test_a_violation_travels_as_a_bad_request_in_neutral_words(ruled: grpc.aio.Channel) -> None:
    """The proto path, the rule id and the rule without any field name: the HTTP name (petIds)
    is only in the message, which gateways before 1.1.0 show."""
    find = ruled.unary_unary(
        f"/{RULED}/Find",
        request_serializer=FindRequest.SerializeToString,
        response_deserializer=FindResponse.FromString,
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await find(FindRequest(ids=[3, 0]), timeout=5)

    code, message, violations = _bad_request(caught.value)
    assert (code, message) == (grpc.StatusCode.INVALID_ARGUMENT.value[0], caught.value.details())
    assert violations == [("ids[1]", "int64.gt", "must be positive")]


async def test_a_streaming_call_carries_the_violation_too(ruled: grpc.aio.Channel) -> None:
    watch = ruled.unary_stream(
        f"/{RULED}/Watch",
        request_serializer=FindRequest.SerializeToString,
        response_deserializer=FindResponse.FromString,
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in watch(FindRequest(), timeout=5):
            pass

    assert _bad_request(caught.value)[2] == [("ids", "repeated.min_items", "must not be empty")]


async def test_a_handler_refusing_one_field_sends_its_violation_and_others_send_none(
    call: Callable[[str], Awaitable[bytes]],
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call("FieldRefused")
    assert caught.value.details() == "quantity is required"
    assert _bad_request(caught.value)[2] == [("order.quantity", "required", "is required")]

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call("Missing")
    assert STATUS_DETAILS_KEY not in dict(caught.value.trailing_metadata() or ())


class HangingCheck:
    """A driver call that swallows every cancellation (cpython#86296 can make one) until the
    test lets it go."""

    def __init__(self) -> None:
        self.released = asyncio.Event()

    async def check(self) -> None:
        while not self.released.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await self.released.wait()


def is_serving_now(readiness: grpc_server.Readiness) -> bool:
    return readiness.status == health_pb2.HealthCheckResponse.SERVING


class CountedHangingCheck:
    """A check that hangs until released, counting how often it was started and cancelled."""

    def __init__(self) -> None:
        self.released = asyncio.Event()
        self.started = 0
        self.cancelled = 0

    async def check(self) -> None:
        self.started += 1
        try:
            await self.released.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


async def test_a_hung_check_is_neither_cancelled_nor_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grpc_server, "CHECK_HUNG_SECONDS", 0.05)
    monkeypatch.setattr(grpc_server, "RECHECK_INTERVAL_SECONDS", 0.01)
    hanging = CountedHangingCheck()
    readiness = grpc_server.Readiness(
        ServiceDefinition(SERVICE, _register, hanging.check), health.aio.HealthServicer()
    )
    watch = asyncio.create_task(readiness.watch())
    try:
        await asyncio.sleep(0.3)  # several intervals, each finding the same check still running
        assert readiness.status == health_pb2.HealthCheckResponse.NOT_SERVING
        assert (hanging.started, hanging.cancelled) == (1, 0)
        hanging.released.set()
        await asyncio.sleep(0.1)
        assert is_serving_now(readiness)
    finally:
        hanging.released.set()
        watch.cancel()
        await asyncio.wait({watch}, timeout=1)


async def test_a_check_the_driver_cancels_is_a_failed_check_and_the_guard_lives_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grpc_server, "STUCK_AFTER_SECONDS", 0.1)
    monkeypatch.setattr(grpc_server, "GUARD_INTERVAL_SECONDS", 0.02)

    async def cancelled_inside() -> None:
        raise asyncio.CancelledError  # as a driver call can end, with nobody cancelling it

    readiness = grpc_server.Readiness(
        ServiceDefinition(SERVICE, _register, cancelled_inside), health.aio.HealthServicer()
    )
    await readiness.report(health_pb2.HealthCheckResponse.NOT_SERVING)
    gave_up: list[float] = []
    guard = asyncio.create_task(readiness.guard(gave_up.append))
    try:
        await asyncio.sleep(0.3)
        assert not guard.done()  # it went on checking: a guard that died would guard nothing
        assert not gave_up  # a failed check is an outage, not a stuck service
    finally:
        guard.cancel()
        await asyncio.wait({guard}, timeout=1)


async def test_a_check_that_hangs_and_swallows_its_cancellation_holds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grpc_server, "CHECK_HUNG_SECONDS", 0.2)
    monkeypatch.setattr(grpc_server, "STUCK_AFTER_SECONDS", 0.5)
    monkeypatch.setattr(grpc_server, "GUARD_INTERVAL_SECONDS", 0.05)
    hanging = HangingCheck()
    definition = ServiceDefinition(SERVICE, _register, hanging.check)
    readiness = grpc_server.Readiness(definition, health.aio.HealthServicer())
    gave_up: list[float] = []
    watch = asyncio.create_task(readiness.watch())
    guard = asyncio.create_task(readiness.guard(gave_up.append))
    try:
        await asyncio.sleep(0.4)
        assert readiness.status == health_pb2.HealthCheckResponse.NOT_SERVING  # the watch went on
        await asyncio.sleep(0.6)
        assert gave_up  # a driver whose checks hang is stuck: the service gives up to be restarted
        for task in (watch, guard):
            task.cancel()
        await asyncio.wait({watch, guard}, timeout=1)
        assert watch.done()
        assert guard.done()
    finally:
        hanging.released.set()
        await asyncio.sleep(0.05)


async def test_a_polled_method_is_logged_only_when_it_fails(caplog: pytest.LogCaptureFixture) -> None:
    """Successful calls of a method the service declares polled (the webhook service's outbox
    reads, about once a second) are not logged; their failures are, and other methods' calls are."""
    caplog.set_level(logging.INFO, logger=grpc_server.__name__)
    settings = ServiceSettings.from_env(
        default_port=0, default_database="t", env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env()}
    )
    polled = frozenset({f"/{SERVICE}/Echo", f"/{SERVICE}/Missing"})
    definition = ServiceDefinition(SERVICE, _register, Readiness().check, polled_methods=polled)
    service = await start_service(definition, settings)
    try:
        async with signed_channel(f"127.0.0.1:{service.port}") as channel:
            for method in ("Echo", "Echo", "Slow", "Missing"):
                stub: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                    f"/{SERVICE}/{method}"
                )
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await stub(b"ping", timeout=5)
    finally:
        await service.stop(None)
    logged = [
        (record.__dict__["grpc_method"], record.__dict__["grpc_code"])
        for record in caplog.records
        if record.getMessage() == "rpc"
    ]
    assert logged == [(f"/{SERVICE}/Slow", "OK"), (f"/{SERVICE}/Missing", "NOT_FOUND")]
