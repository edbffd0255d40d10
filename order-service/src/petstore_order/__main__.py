"""`python -m petstore_order`: serve the order service until SIGTERM."""

from __future__ import annotations

from petstore_common.grpc_server import run_service
from petstore_order.service import order_service
from petstore_order.settings import OrderSettings


def main() -> None:
    run_service("order-service", OrderSettings.from_env, order_service)


if __name__ == "__main__":
    main()
