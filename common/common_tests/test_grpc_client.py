"""Client channels over several replicas: round_robin, client-side health, ageing connections.

Two real servers on loopback stand for two replicas; the `ipv4:` target lists both, as a DNS
name behind a headless Service or compose's DNS resolves to both.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2_grpc

from petstore.pet.v1 import pet_service_pb2
from petstore_common.caller_testing import signed_channel, trusting_env
from petstore_common.grpc_server import (
    NO_PORT_SHARING,
    RunningService,
    ServiceDefinition,
    server_options,
    start_service,
)
from petstore_common.settings import ServiceSettings

SERVICE = "test.v1.WhoService"
PET = pet_service_pb2.DESCRIPTOR.services_by_name["PetService"]


class Replica:
    """One server that answers Who with its own name, and whose readiness a test can flip."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ready = True
        self.running: RunningService | None = None

    async def check(self) -> None:
        if not self.ready:
            raise ConnectionError("database unreachable")

    def register(self, server: grpc.aio.Server) -> None:
        async def who(request: bytes, context: Any) -> bytes:
            await asyncio.sleep(0.02)  # long enough for calls to overlap a stop
            return self.name.encode()

        handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
            "Who": grpc.unary_unary_rpc_method_handler(who)
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))

    async def start(self, env: dict[str, str]) -> int:
        settings = ServiceSettings.from_env(
            default_port=0,
            default_database="t",
            env={"GRPC_LISTEN_ADDR": "127.0.0.1:0", **trusting_env(), **env},
        )
        self.running = await start_service(ServiceDefinition(SERVICE, self.register, self.check), settings)
        return self.running.port

    async def stop(self, grace: float | None) -> None:
        if self.running is not None:
            await self.running.stop(grace)
            self.running = None


@pytest.fixture
async def replicas(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Replica, Replica, str]]:
    """Two replicas and the target that names both; `env` by indirect parametrization."""
    env: dict[str, str] = getattr(request, "param", {})
    first, second = Replica("a"), Replica("b")
    ports = [await first.start(env), await second.start(env)]
    try:
        yield first, second, "ipv4:" + ",".join(f"127.0.0.1:{port}" for port in ports)
    finally:
        await first.stop(None)
        await second.stop(None)


async def _calls(channel: grpc.aio.Channel, count: int) -> Counter[str]:
    who: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{SERVICE}/Who")
    answers: Counter[str] = Counter()
    for _ in range(count):
        answers[(await who(b"", timeout=5)).decode()] += 1
    return answers


async def test_calls_take_turns_over_every_address(replicas: tuple[Replica, Replica, str]) -> None:
    _, _, target = replicas
    async with signed_channel(target) as channel:
        await _calls(channel, 4)  # both connections up
        answers = await _calls(channel, 40)
    assert answers == {"a": 20, "b": 20}


async def test_a_replica_reporting_not_serving_gets_no_calls(replicas: tuple[Replica, Replica, str]) -> None:
    first, _, target = replicas
    async with signed_channel(target) as channel:
        await _calls(channel, 4)
        first.ready = False
        for _ in range(50):  # its health watch reports NOT_SERVING within one check interval
            if set(await _calls(channel, 4)) == {"b"}:
                break
            await asyncio.sleep(0.1)
        assert await _calls(channel, 20) == {"b": 20}


async def test_stopping_one_replica_under_load_fails_no_call(replicas: tuple[Replica, Replica, str]) -> None:
    first, _, target = replicas
    failures: list[grpc.StatusCode] = []
    answers: Counter[str] = Counter()
    stopping = asyncio.Event()

    async with signed_channel(target) as channel:
        who: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{SERVICE}/Who")
        await _calls(channel, 4)

        async def worker() -> None:
            while not stopping.is_set():
                try:
                    answers[(await who(b"", timeout=5)).decode()] += 1
                except grpc.aio.AioRpcError as exc:
                    failures.append(exc.code())

        async with AsyncExitStack() as stack:
            workers = [asyncio.create_task(worker()) for _ in range(8)]
            stack.callback(stopping.set)
            await asyncio.sleep(0.3)
            assert answers["a"] > 0
            assert answers["b"] > 0
            await first.stop(grace=2)  # NOT_SERVING first, then in-flight calls drain
            after_stop = answers["b"]
            await asyncio.sleep(0.5)
            stopping.set()
            await asyncio.gather(*workers)

    assert failures == []
    assert answers["b"] > after_stop  # the survivor took over


@pytest.mark.parametrize("replicas", [{"GRPC_MAX_CONNECTION_AGE_SECONDS": "0.5"}], indirect=True)
async def test_connections_age_out_without_failing_calls(replicas: tuple[Replica, Replica, str]) -> None:
    _, _, target = replicas
    async with signed_channel(target) as channel:
        answers: Counter[str] = Counter()
        for _ in range(15):  # ~3 s: every connection is replaced several times
            answers += await _calls(channel, 10)
            await asyncio.sleep(0.1)
    assert sum(answers.values()) == 150
    assert set(answers) == {"a", "b"}


def test_server_options_set_a_maximum_connection_age() -> None:
    def options(env: dict[str, str]) -> dict[str, int]:
        settings = ServiceSettings.from_env(default_port=0, default_database="t", env=env)
        return dict(server_options(settings))

    assert options({})["grpc.max_connection_age_ms"] == 30_000
    assert options({"GRPC_MAX_CONNECTION_AGE_SECONDS": "5"})["grpc.max_connection_age_ms"] == 5_000
    assert options({"GRPC_MAX_CONNECTION_AGE_SECONDS": "5"})["grpc.max_connection_age_grace_ms"] == 10_000
    assert "grpc.max_connection_age_ms" not in options({"GRPC_MAX_CONNECTION_AGE_SECONDS": "0"})


class _FailsFirst(grpc.GenericRpcHandler):
    """PetService.GetPet (a read) and CreatePet (a write) that answer UNAVAILABLE the first
    time each is called, then succeed; counts the calls that reached it."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def service(self, call: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = call.method
        if not method.startswith("/petstore.pet.v1.PetService/"):
            return None  # the health service answers the channel's health watch

        async def answer(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            self.calls[method] += 1
            if self.calls[method] == 1:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "not yet")
            return b""

        return grpc.unary_unary_rpc_method_handler(answer)


async def test_a_read_that_meets_no_replica_is_tried_again_and_a_write_is_not() -> None:
    handler = _FailsFirst()
    server = grpc.aio.server(options=NO_PORT_SHARING)
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    server.add_generic_rpc_handlers([handler])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with signed_channel(f"127.0.0.1:{port}", services=(PET,)) as channel:
            read: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                "/petstore.pet.v1.PetService/GetPet"
            )
            write: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                "/petstore.pet.v1.PetService/CreatePet"
            )
            assert await read(b"", timeout=5) == b""
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await write(b"", timeout=5)
    finally:
        await server.stop(None)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert handler.calls == {
        "/petstore.pet.v1.PetService/GetPet": 2,
        "/petstore.pet.v1.PetService/CreatePet": 1,
    }
