"""Client channels with the same settings everywhere: fast reconnects, request id propagation."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.descriptor_pb2 import MethodOptions
from grpc_health.v1 import health_pb2

from petstore_common.caller_tokens import CallerClaims, CallerSigner
from petstore_common.request_context import NO_REQUEST_ID, REQUEST_ID_METADATA_KEY, current_request_id


# Every address the target's name resolves to (dns:///pet-service:50051: each replica
# behind a headless Service or compose's DNS) gets a connection, and calls take turns
# (round_robin; gRPC's default, pick_first, would send all of them to one replica). Client-side
# health checking (grpc.health.v1 Watch) takes a replica out of the turn the moment it reports
# NOT_SERVING, which a service does on SIGTERM before it stops: replicas restart one at a
# time without a failed call.
#
# Reads that fail UNAVAILABLE are tried again, twice at most, within the call's own deadline:
# while replicas restart one at a time there are moments with no replica in the turn (one has
# just reported NOT_SERVING, the other is still reconnecting), and a read then fails at once
# (a rolling restart under load lost 5 orders' pet look-ups in 600). Writes are never retried
# here: a write whose answer was lost could take effect twice (clients retry them with an
# Idempotency-Key instead), but for the pet steps of an order's sale, which are keyed by the
# order's id and take effect once however often they are asked.
#
# Which methods those are is written once, in the protos: a read is marked
# `option idempotency_level = NO_SIDE_EFFECTS;`, a write that takes effect once however often
# it is asked `IDEMPOTENT`. A method added to a proto is retried exactly when it is marked so.
# Each channel is told the services it calls, so this module imports no service's contract: a
# change to one service's proto releases that service and its callers only.
def methods_marked(level: int, services: Iterable[ServiceDescriptor]) -> dict[str, tuple[str, ...]]:
    """Service full name -> its methods whose idempotency_level is `level`, in proto order."""
    marked = {
        service.full_name: tuple(
            method.name for method in service.methods if method.GetOptions().idempotency_level == level
        )
        for service in services
    }
    return {service: methods for service, methods in marked.items() if methods}


RETRIED_LEVELS = (MethodOptions.NO_SIDE_EFFECTS, MethodOptions.IDEMPOTENT)
"""The reads, and the writes that take effect once however often they are asked."""


def retried_methods(services: Iterable[ServiceDescriptor]) -> list[dict[str, str]]:
    """The service config's names of the methods of `services` that are retried."""
    services = tuple(services)
    return [
        {"service": service, "method": method}
        for level in RETRIED_LEVELS
        for service, methods in methods_marked(level, services).items()
        for method in methods
    ]


def service_config(services: Iterable[ServiceDescriptor]) -> dict[str, Any]:
    """Round robin over the target's replicas, client-side health checks, and retries of the
    marked methods of the services the channel is for."""
    retried = retried_methods(services)
    return {
        "loadBalancingConfig": [{"round_robin": {}}],
        "healthCheckConfig": {"serviceName": ""},
        "methodConfig": [
            {
                "name": retried,
                "retryPolicy": {
                    "maxAttempts": 3,
                    "initialBackoff": "0.1s",
                    "maxBackoff": "0.5s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ]
        if retried
        else [],
    }


@functools.lru_cache(maxsize=1024)  # the methods a process serves: a handful
def idempotency_level(method_path: str) -> int:
    """The idempotency_level marked on a method, from its path as a server sees it
    ("/petstore.pet.v1.PetService/GetPet"); IDEMPOTENCY_UNKNOWN for a method no proto
    loaded in this process declares (the health service's, say)."""
    try:
        method = descriptor_pool.Default().FindMethodByName(method_path.lstrip("/").replace("/", "."))
    except KeyError:
        return MethodOptions.IDEMPOTENCY_UNKNOWN
    return int(method.GetOptions().idempotency_level)


# A restarted service is reached again within about a second instead of gRPC's default
# exponential backoff of up to two minutes.
CHANNEL_OPTIONS: tuple[tuple[str, int | str], ...] = (
    # A replica that comes back under a new address is found at the next failure's
    # re-resolution within a second, not gRPC's default of at most one look-up per 30 s.
    ("grpc.dns_min_time_between_resolutions_ms", 1000),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    # Connections belong to their channel alone. With gRPC's default process-wide pool a new
    # channel to an address inherits the state of any other channel's connection to it, e.g. one
    # in reconnect backoff to a server that has gone and whose port a new server now has: the
    # new channel's first calls fail UNAVAILABLE at once.
    ("grpc.use_local_subchannel_pool", 1),
)


class RequestIdClientInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    """Adds the current request id to every outgoing call's metadata."""

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        request_id = current_request_id.get()
        if request_id == NO_REQUEST_ID:  # outside a request the server picks a fresh id
            return await continuation(client_call_details, request)
        details = _with_metadata(client_call_details, (REQUEST_ID_METADATA_KEY, request_id))
        return await continuation(details, request)


def _with_metadata(details: grpc.aio.ClientCallDetails, entry: tuple[str, str]) -> grpc.aio.ClientCallDetails:
    metadata = grpc.aio.Metadata(*(details.metadata or ()))
    metadata[entry[0]] = entry[1]
    return grpc.aio.ClientCallDetails(
        details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
    )


def _method_name(details: grpc.aio.ClientCallDetails) -> str:
    method: str | bytes = details.method  # typed str, but grpc.aio hands interceptors bytes
    return method.decode() if isinstance(method, bytes) else method


class CallerTokenClientInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    """Signs every call: a caller token for the called service, vouching for the request's own
    `caller` (none for a request without one), so a service believes exactly that caller."""

    def __init__(self, signer: CallerSigner) -> None:
        self._signer = signer

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        return await continuation(_signed(self._signer, client_call_details, request), request)


class CallerTokenStreamClientInterceptor(grpc.aio.UnaryStreamClientInterceptor):
    """The same for server-streaming calls (the pet service's WatchPets)."""

    def __init__(self, signer: CallerSigner) -> None:
        self._signer = signer

    async def intercept_unary_stream(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Any],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        return await continuation(_signed(self._signer, client_call_details, request), request)


def _signed(
    signer: CallerSigner, details: grpc.aio.ClientCallDetails, request: Any
) -> grpc.aio.ClientCallDetails:
    caller = CallerClaims.of_request(request)
    return _with_metadata(details, signer.metadata(_method_name(details), caller or CallerClaims()))


def create_channel(
    target: str, services: Iterable[ServiceDescriptor] = (), *, signer: CallerSigner | None = None
) -> grpc.aio.Channel:
    """An insecure channel to `target` (host:port, or dns:///host:port for every address
    the name resolves to) for in-cluster traffic, retrying the marked methods of `services`
    (none for a channel that only checks health). With `signer` every call carries a caller
    token (the services refuse calls without one); health checks need none."""
    options = [("grpc.service_config", json.dumps(service_config(services))), *CHANNEL_OPTIONS]
    interceptors: list[grpc.aio.ClientInterceptor] = [RequestIdClientInterceptor()]
    if signer is not None:
        interceptors += [CallerTokenClientInterceptor(signer), CallerTokenStreamClientInterceptor(signer)]
    return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)


HEALTH_METHOD_PREFIX = "/grpc.health."
"""The method paths of gRPC's health service: probes that carry no caller token, are never
logged per call, and are no write."""
WRITES_HEALTH_SUFFIX = "/writes"
"""A service reports the health name `<service>/writes` NOT_SERVING while its database refuses
writes for lack of storage (petstore_common.storage_faults); SERVING otherwise."""


async def health_status(channel: grpc.aio.Channel, service: str = "", deadline_s: float = 1.0) -> int | None:
    """The standard gRPC health service's status of `service` ("" = the server); None when it
    cannot be had (the server unreachable, or a name it does not report: NOT_FOUND)."""
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=health_pb2.HealthCheckResponse.FromString,
    )
    try:
        reply = await check(health_pb2.HealthCheckRequest(service=service), timeout=deadline_s)
    except grpc.RpcError:
        return None
    status: int = reply.status
    return status


async def is_serving(channel: grpc.aio.Channel, service: str = "", deadline_s: float = 1.0) -> bool:
    """Ask the standard gRPC health service whether `service` ("" = the server) is SERVING."""
    return await health_status(channel, service, deadline_s) == health_pb2.HealthCheckResponse.SERVING
