"""`python -m petstore_gateway`: serve the HTTP API until SIGINT or SIGTERM."""

from __future__ import annotations

import logging
import sys

from aiohttp import web

from petstore_common.logging import configure_logging
from petstore_common.settings import SettingsError
from petstore_gateway.app import create_app
from petstore_gateway.settings import GatewaySettings

log = logging.getLogger("petstore_gateway")


def main() -> None:
    try:
        settings = GatewaySettings.from_env()
    except SettingsError as exc:
        print(f"petstore_gateway: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging("gateway", settings.log_level)
    log.info("starting", extra={"settings": repr(settings)})
    # run_app turns SIGINT and SIGTERM into a graceful stop: stop accepting, let in-flight
    # requests finish within shutdown_timeout, then run the clean-up (closing channels).
    web.run_app(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        access_log=None,
        shutdown_timeout=settings.grace_seconds,
        print=lambda message: log.info(message.strip()),
    )
    log.info("stopped")


if __name__ == "__main__":
    main()
