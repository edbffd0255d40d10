"""What the product makes of Pet.name's length rule, with whatever generated protobuf code comes
first on the path: run by tests/test_protos_contract.py over protos it changed and regenerated.

    python tests/pet_name_probe.py N

starts the three services in this process and the gateway in front of them (loopback), and
prints, as JSON, the maxLength both descriptions publish for Pet.name (and for the form's
name) and the status (and error message) of POST /v2/pet with a name of N and of N + 1 characters.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from petstore_devstack.inprocess import in_process_stack
from petstore_gateway.app import create_app
from petstore_gateway.clients import ServiceClients
from petstore_gateway.settings import GatewaySettings

SECRET = "a-session-secret-of-at-least-32-characters"
STAFF_KEY = "probe-staff-key"


async def probe(length: int) -> dict[str, Any]:
    settings = GatewaySettings.from_env(
        {"PETSTORE_SESSION_SECRET": SECRET, "PETSTORE_API_KEYS": STAFF_KEY, "RATE_LIMIT_PER_SECOND": "0"}
    )
    async with in_process_stack(SECRET) as stack:
        clients = ServiceClients.connect(
            pet_addr=stack.pet.address,
            order_addr=stack.order.address,
            user_addr=stack.user.address,
            webhook_addr=settings.webhook_service_addr,  # not started here: nothing calls it
            signer=stack.gateway_signer,
        )
        try:
            async with TestClient(TestServer(create_app(settings, clients=clients))) as client:
                swagger = await (await client.get("/v2/swagger.json")).json()
                openapi = await (await client.get("/v2/openapi.json")).json()
                created = {}
                for n in (length, length + 1):
                    pet = {"name": "x" * n, "photoUrls": []}
                    response = await client.post("/v2/pet", json=pet, headers={"api_key": STAFF_KEY})
                    created[n] = (response.status, (await response.json()).get("message"))
        finally:
            await clients.close()
    form = swagger["paths"]["/pet/{petId}"]["post"]["parameters"]
    return {
        "swagger": swagger["definitions"]["Pet"]["properties"]["name"]["maxLength"],
        "openapi": openapi["components"]["schemas"]["Pet"]["properties"]["name"]["maxLength"],
        "form": next(p["maxLength"] for p in form if p["name"] == "name"),
        "created": created,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(probe(int(sys.argv[1])))))
