"""deploy/docker/healthcheck.py, run as Docker runs it, against real gRPC and HTTP servers."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from petstore_common.grpc_server import NO_PORT_SHARING

from .support import REPO

SCRIPT = REPO / "deploy" / "docker" / "healthcheck.py"


def run_check(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("GRPC_LISTEN_ADDR", "GATEWAY_PORT")}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--timeout", "2"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.fixture
def grpc_health_server() -> Iterator[tuple[int, health.HealthServicer]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), options=NO_PORT_SHARING)
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield port, servicer
    server.stop(None).wait()


def test_grpc_serving_is_healthy(grpc_health_server: tuple[int, health.HealthServicer]) -> None:
    port, servicer = grpc_health_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    # The port is taken from GRPC_LISTEN_ADDR, like in the images.
    assert run_check("grpc", GRPC_LISTEN_ADDR=f"0.0.0.0:{port}").returncode == 0


def test_grpc_not_serving_is_unhealthy(grpc_health_server: tuple[int, health.HealthServicer]) -> None:
    port, servicer = grpc_health_server
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    result = run_check("grpc", GRPC_LISTEN_ADDR=f"0.0.0.0:{port}")
    assert result.returncode == 1
    assert "NOT_SERVING" in result.stderr


def test_grpc_unknown_service_and_no_server_are_unhealthy(
    grpc_health_server: tuple[int, health.HealthServicer],
) -> None:
    port, _ = grpc_health_server
    assert run_check("grpc", "--port", str(port), "--service", "no.such.Service").returncode == 1
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1), options=NO_PORT_SHARING)
    free = server.add_insecure_port("127.0.0.1:0")  # bound, never started: nothing answers
    assert run_check("grpc", "--port", str(free)).returncode == 1


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/livez" else 503)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def http_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join()


def test_http_livez(http_server: int) -> None:
    assert run_check("http", GATEWAY_PORT=str(http_server)).returncode == 0
    assert run_check("http", "--port", str(http_server), "--path", "/readyz").returncode == 1


def test_http_nothing_listening() -> None:
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler) as unused:
        port = unused.server_address[1]
    assert run_check("http", "--port", str(port)).returncode == 1
