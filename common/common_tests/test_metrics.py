"""The metrics listener every process serves on METRICS_PORT."""

from __future__ import annotations

import socket
import urllib.request

from prometheus_client import CollectorRegistry, Counter

from petstore_common.metrics import start_metrics_server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_port_zero_means_no_listener() -> None:
    assert start_metrics_server(0) is None


def test_serves_the_registry_it_is_given_until_stopped() -> None:
    registry = CollectorRegistry()
    Counter("things", "Things seen.", registry=registry).inc()
    served = start_metrics_server(_free_port(), registry=registry, addr="127.0.0.1")
    assert served is not None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{served.port}/metrics", timeout=5) as response:
            assert b"things_total 1.0" in response.read()
    finally:
        served.stop()
    with socket.socket() as sock:  # the port is free again (its closed connection may linger)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", served.port))
