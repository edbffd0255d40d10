#!/usr/bin/env python3
"""Container health check for the Petstore images (Docker HEALTHCHECK and compose).

    petstore-healthcheck grpc   # a service: grpc.health.v1 Check("") must say SERVING
    petstore-healthcheck http   # the gateway: GET /livez must answer 200

Exit status 0 = healthy, 1 = unhealthy, as Docker expects. The port comes from the same
environment variable the process listens on (GRPC_LISTEN_ADDR / GATEWAY_PORT), so an override
of the listen address does not silently break the check; --port overrides it.

Kubernetes does not use this script: it has native gRPC and HTTP probes (deploy/k8s).
It lives in deploy/ (not in common/) because only the images need it; it is copied into each
image as /usr/local/bin/petstore-healthcheck. Only the standard library is needed for `http`;
`grpc` needs grpcio and grpcio-health-checking, which every service image has.
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_TIMEOUT_SECONDS = 3.0


def grpc_port(env: Mapping[str, str]) -> int:
    """The port of GRPC_LISTEN_ADDR (host:port, [v6]:port); 50051 when unset."""
    addr = env.get("GRPC_LISTEN_ADDR", "").strip() or "0.0.0.0:50051"
    return int(addr.rsplit(":", 1)[1])


def http_port(env: Mapping[str, str]) -> int:
    return int(env.get("GATEWAY_PORT", "").strip() or "8080")


def check_grpc(port: int, service: str, timeout: float) -> bool:
    """True when the gRPC health service on 127.0.0.1:port reports `service` SERVING."""
    import grpc  # imported here: the `http` check needs only the standard library
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)  # generated stubs are untyped
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as exc:
            print(f"unhealthy: {exc.code().name}", file=sys.stderr)
            return False
    serving: bool = reply.status == health_pb2.HealthCheckResponse.SERVING
    if not serving:
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        print(f"unhealthy: {status}", file=sys.stderr)
    return serving


def check_http(port: int, path: str, timeout: float) -> bool:
    """True when GET http://127.0.0.1:port<path> answers 2xx."""
    url = f"http://127.0.0.1:{port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            status: int = response.status
    except (urllib.error.URLError, OSError) as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return False
    return 200 <= status < 300


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(prog="petstore-healthcheck", description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("grpc", "http"))
    parser.add_argument("--port", type=int, help="default: from GRPC_LISTEN_ADDR or GATEWAY_PORT")
    parser.add_argument("--service", default="", help='gRPC health service name (default "": the server)')
    parser.add_argument("--path", default="/livez", help="HTTP path (default /livez)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS)
    args = parser.parse_args(argv)
    if args.kind == "grpc":
        healthy = check_grpc(args.port or grpc_port(env), args.service, args.timeout)
    else:
        healthy = check_http(args.port or http_port(env), args.path, args.timeout)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
