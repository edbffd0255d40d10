"""gRPC servers on loopback that answer only the methods a test gives them (any other is
UNIMPLEMENTED, as from a service of an earlier release)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message_factory import GetMessageClass

Handler = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]


def handlers_for(service: ServiceDescriptor, methods: Mapping[str, Handler]) -> grpc.GenericRpcHandler:
    """`service`'s methods named in `methods`, each (de)serialized with its proto types."""
    rpcs: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for name, handler in methods.items():
        method = service.methods_by_name[name]
        rpcs[name] = grpc.unary_unary_rpc_method_handler(
            handler,
            request_deserializer=GetMessageClass(method.input_type).FromString,
            response_serializer=lambda message: message.SerializeToString(),
        )
    return grpc.method_handlers_generic_handler(service.full_name, rpcs)


async def serve(*handlers: grpc.GenericRpcHandler) -> tuple[grpc.aio.Server, str]:
    """A started server with `handlers`, and its address."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(handlers)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"
