"""Faults the real services cannot be made to show on demand, put in front of them (or, where
no service is involved at all, in place of one). Each says why it is not the real thing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import grpc
from grpc_health.v1 import health, health_pb2_grpc

from petstore_common import caller_keys
from petstore_common.caller_gate import GATEWAY
from petstore_common.caller_tokens import CallerSigner
from petstore_common.grpc_server import NO_PORT_SHARING
from petstore_gateway.clients import ServiceClients

if TYPE_CHECKING:
    Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]]


class ChangeFeedDelay(grpc.aio.ServerInterceptor):
    """Holds back the pet service's WatchPets messages while held: a change feed that lags.

    The embedded store streams each change the moment it commits; a feed that lags behind
    (a replica's change stream, a slow network) cannot be had from it on demand."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if (
            handler is None
            or handler.unary_stream is None
            or not handler_call_details.method.endswith("/WatchPets")
        ):
            return handler
        # The aio server keeps async generator functions there (the stubs describe the sync API).
        behaviour = cast("Callable[[Any, Any], AsyncIterator[Any]]", handler.unary_stream)
        is_open = self._open

        async def delayed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
            async for message in behaviour(request, context):
                await is_open.wait()
                yield message

        return grpc.unary_stream_rpc_method_handler(
            delayed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


class NoChangeStreams(grpc.aio.ServerInterceptor):
    """Answers WatchPets FAILED_PRECONDITION, as a pet service on a database without change
    streams (FerretDB) does; the embedded store always has them."""

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or not handler_call_details.method.endswith("/WatchPets"):
            return handler

        async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
            nothing: tuple[Any, ...] = ()
            for message in nothing:  # an async generator, like the handler it stands for
                yield message
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the database cannot stream its changes")

        return grpc.unary_stream_rpc_method_handler(
            refuse,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


class ExhaustedPets:
    """A pet stub whose every call is refused as a server past its MAX_CONCURRENT_RPCS refuses
    it (gRPC's own RESOURCE_EXHAUSTED): the in-process pet service sheds no load unless a test
    keeps it busy for the whole request."""

    async def GetPet(self, request: object, **options: object) -> object:
        raise grpc.aio.AioRpcError(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            grpc.aio.Metadata(),
            grpc.aio.Metadata(),
            details="Concurrent RPC limit exceeded!",
        )


class _Refuse(grpc.GenericRpcHandler):
    """Answers every method of the petstore services with one status. The health service is
    left to a real servicer: the gateway's channels watch it (client-side health checking)
    and would otherwise never send a call at all."""

    def __init__(self, code: grpc.StatusCode) -> None:
        self.code = code

    def service(self, call: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any] | None:
        if call.method.startswith("/grpc.health.v1.Health/"):
            return None

        async def refuse(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            await context.abort(self.code, "refused")

        return grpc.unary_unary_rpc_method_handler(refuse)


@asynccontextmanager
async def refusing_services(code: grpc.StatusCode) -> AsyncIterator[ServiceClients]:
    """Channels to services that refuse every call with `code` while reporting SERVING:
    shedding load (RESOURCE_EXHAUSTED), unavailable or past the deadline for every operation at
    once, which no real service does on demand."""
    server = grpc.aio.server(options=NO_PORT_SHARING)
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    server.add_generic_rpc_handlers([_Refuse(code)])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    address = f"127.0.0.1:{port}"
    try:
        # These fakes check no token, but the gateway signs every call all the same.
        signer = CallerSigner(GATEWAY, caller_keys.generate().seed)
        yield ServiceClients.connect(
            pet_addr=address, order_addr=address, user_addr=address, webhook_addr=address, signer=signer
        )
    finally:
        await server.stop(None)
