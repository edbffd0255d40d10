"""`python -m petstore_gateway`: serve the HTTP API until SIGINT or SIGTERM, then drain."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from petstore_common.logging import configure_logging, settings_fields
from petstore_common.metrics import start_metrics_server
from petstore_common.settings import SettingsError
from petstore_common.tracing import configure_tracing
from petstore_gateway.app import caller_signer, create_app
from petstore_gateway.connections import ConnectionTimeouts
from petstore_gateway.keys import METRICS
from petstore_gateway.serving import serve
from petstore_gateway.settings import GatewaySettings
from petstore_gateway.workers import Workers, metrics_port, worker_index

log = logging.getLogger("petstore_gateway")


def main() -> None:
    try:
        settings = GatewaySettings.from_env()
        caller_signer(settings)  # the services refuse unsigned calls: no key, no start
    except SettingsError as exc:
        print(f"petstore_gateway: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging("gateway", settings.log_level)
    index = worker_index()
    if index == 0:
        log.info("starting", extra={"settings": settings_fields(settings)})
    workers = Workers(settings.workers if index == 0 else 1)
    workers.start()
    tracing = configure_tracing("gateway", os.environ)  # before the app and its channels exist
    app = create_app(settings)
    if tracing is not None:
        tracing.instrument_app(app)
    metrics = None
    try:
        metrics = start_metrics_server(
            metrics_port(settings.metrics_port, index), registry=app[METRICS].registry, addr=settings.host
        )
        asyncio.run(
            serve(
                app,
                host=settings.host,
                port=settings.port,
                grace_seconds=settings.grace_seconds,
                timeouts=ConnectionTimeouts.from_settings(settings),
                reuse_port=settings.workers > 1,
                on_stop=workers.signal_stop,
            )
        )
    finally:
        if metrics is not None:
            metrics.stop()
        workers.signal_stop()
        workers.wait(timeout=settings.grace_seconds + 5)
    if tracing is not None:
        tracing.shutdown()  # flushes the spans still queued
    log.info("stopped", extra={"worker": index})
    if workers.lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
