"""`python -m petstore_order`: serve the order service until SIGTERM."""

from __future__ import annotations

import asyncio

from petstore_common.grpc_server import serve
from petstore_common.logging import configure_logging
from petstore_order.service import order_service
from petstore_order.settings import OrderSettings


def main() -> None:
    settings = OrderSettings.from_env()
    configure_logging("order-service", settings.service.log_level)
    # serve() hands the factory back settings.service; the closure carries the pet settings.
    asyncio.run(serve(lambda _: order_service(settings), settings.service))


if __name__ == "__main__":
    main()
