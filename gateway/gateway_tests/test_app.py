from __future__ import annotations

from dataclasses import replace

import pytest
from aiohttp.test_utils import TestClient, TestServer
from grpc.aio import UsageError

from petstore_common.grpc_client import is_serving
from petstore_common.settings import SettingsError
from petstore_gateway.app import create_app
from petstore_gateway.keys import CLIENTS
from petstore_gateway.settings import GatewaySettings

from .backend import Backend


async def test_without_injected_clients_channels_open_on_start_and_close_on_cleanup(
    settings: GatewaySettings, backend: Backend
) -> None:
    stack = backend.stack
    app = create_app(
        replace(
            settings,
            pet_service_addr=stack.pet.address,
            order_service_addr=stack.order.address,
            user_service_addr=stack.user.address,
            webhook_service_addr=backend.webhook_service.address,
            caller_signing_key=stack.caller_keys["gateway"].seed,
        )
    )
    async with TestClient(TestServer(app)) as client:
        response = await client.get("/readyz")
        assert response.status == 200
        assert (await response.json())["message"] == "ready"  # the webhook service too
        # A call the services answer: they only do for calls the gateway signed.
        assert (await client.get("/v2/pet/424242")).status == 404
        channels = list(app[CLIENTS].channels.values())
    assert len(channels) == 4  # pet, order, user and webhook
    for channel in channels:
        with pytest.raises(UsageError, match="closed"):
            await is_serving(channel)


def test_without_a_signing_key_the_gateway_does_not_open_channels(settings: GatewaySettings) -> None:
    # The services refuse every unsigned call: a gateway without a key would answer only errors.
    with pytest.raises(SettingsError, match="CALLER_SIGNING_KEY must be set"):
        create_app(replace(settings, caller_signing_key=""))
