"""The Prometheus /metrics listener every process serves on a port of its own (METRICS_PORT),
never on the port its clients call."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, start_http_server
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MetricsServer:
    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_metrics_server(
    port: int, *, registry: Collector = REGISTRY, addr: str = "0.0.0.0"
) -> MetricsServer | None:
    """Serve `registry` in the Prometheus text format on addr:port, from a thread (a scrape
    never waits for the event loop, nor holds it). Port 0: no listener, None."""
    if not port:
        return None
    server, thread = start_http_server(port, addr=addr, registry=registry)
    log.info("metrics served", extra={"metrics_port": server.server_port})
    return MetricsServer(server, thread)
