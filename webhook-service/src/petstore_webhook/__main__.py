"""`python -m petstore_webhook`: serve the webhook service, and deliver, until SIGTERM."""

from __future__ import annotations

from petstore_common.grpc_server import run_service
from petstore_webhook.service import webhook_service
from petstore_webhook.settings import WebhookSettings


def main() -> None:
    run_service("webhook-service", WebhookSettings.from_env, webhook_service)


if __name__ == "__main__":
    main()
