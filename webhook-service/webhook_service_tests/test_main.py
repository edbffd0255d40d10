"""`python -m petstore_webhook` serves until SIGTERM, then stops cleanly; its relay keeps
running (and keeps still) while the order and pet services it reads are not there."""

from __future__ import annotations

import grpc
import pytest

from petstore.webhook.v1 import webhook_service_pb2 as pb
from petstore.webhook.v1 import webhook_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import GATEWAY, WEBHOOK_SERVICE
from petstore_common.caller_testing import KEYS, signed_channel, trusting_env
from petstore_devstack.service_process import service_process
from petstore_webhook.service import SERVICE_NAME

from .conftest import closed_address

STAFF = callers.staff()


async def test_the_process_serves_and_stops_on_sigterm() -> None:
    env = {
        "MONGODB_URI": "",
        "GRACE_SECONDS": "1",
        "ORDER_SERVICE_ADDR": closed_address(),
        "PET_SERVICE_ADDR": closed_address(),
        "CALLER_SIGNING_KEY": KEYS[WEBHOOK_SERVICE].seed,
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "WEBHOOK_POLL_SECONDS": "0.05",
        **trusting_env(GATEWAY),
    }
    async with service_process("petstore_webhook", SERVICE_NAME, env) as service:
        async with signed_channel(service.address) as channel:
            stub = webhook_service_pb2_grpc.WebhookServiceStub(channel)
            created = await stub.CreateEndpoint(
                pb.CreateEndpointRequest(
                    url="https://127.0.0.1:1/in", event_types=["pet.sold"], caller=STAFF
                ),
                timeout=5,
            )
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.CreateEndpoint(
                    pb.CreateEndpointRequest(
                        url="https://10.0.0.1/in", event_types=["pet.sold"], caller=STAFF
                    ),
                    timeout=5,
                )
        assert created.endpoint.id == 1
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert await service.stop() == (0, "stopped")
