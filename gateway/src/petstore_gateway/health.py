"""Liveness and readiness endpoints, outside /v2 and open. (/metrics is on a port of its own:
METRICS_PORT, served by petstore_common.metrics from __main__.)"""

from __future__ import annotations

import asyncio

from aiohttp import web
from grpc_health.v1 import health_pb2

from petstore_common.grpc_client import WRITES_HEALTH_SUFFIX, health_status, is_serving
from petstore_gateway.bodies import respond_message
from petstore_gateway.clients import READINESS_SERVICES, SHORT_NAMES
from petstore_gateway.errors import UNAVAILABLE_RETRY_AFTER, ApiError
from petstore_gateway.keys import CLIENTS, SETTINGS

READINESS_DEADLINE_SECONDS = 1.0
INSTANCE_ID_HEADER = "X-Instance-ID"
"""On /livez when GATEWAY_INSTANCE_ID is set: which process answered."""

routes = web.RouteTableDef()


@routes.get("/livez")
async def livez(request: web.Request) -> web.Response:
    """200 while the process runs: it says nothing about the services behind."""
    instance_id = request.app[SETTINGS].instance_id
    return respond_message(
        request, "live", headers={INSTANCE_ID_HEADER: instance_id} if instance_id else None
    )


@routes.get("/readyz")
async def readyz(request: web.Request) -> web.Response:
    """200 when the shop's services (pet, order, user) report SERVING, else 503 naming those that
    do not. A service whose database refuses writes for lack of storage (its `<service>/writes`
    health name NOT_SERVING) keeps the gateway ready, since reads work, and is named in the
    message; so is the webhook service when it is not serving: only /v2/webhooks needs it, and
    no order or pet waits for it (READINESS_SERVICES)."""
    channels = request.app[CLIENTS].channels
    names = list(channels)
    serving, writes = await asyncio.gather(
        asyncio.gather(*(is_serving(channels[name], name, READINESS_DEADLINE_SECONDS) for name in names)),
        asyncio.gather(
            *(
                health_status(channels[name], name + WRITES_HEALTH_SUFFIX, READINESS_DEADLINE_SECONDS)
                for name in names
            )
        ),
    )
    down = [name for name, ok in zip(names, serving, strict=True) if not ok]
    not_ready = [SHORT_NAMES.get(name, name) for name in down if name in READINESS_SERVICES]
    if not_ready:
        raise ApiError(
            503,
            f"not ready: the {', '.join(not_ready)} service(s) not serving",
            headers={"Retry-After": UNAVAILABLE_RETRY_AFTER},
        )
    refusing = [
        SHORT_NAMES.get(name, name)
        for name, status in zip(names, writes, strict=True)
        if status == health_pb2.HealthCheckResponse.NOT_SERVING
    ]
    notes = ["ready"]
    if refusing:
        notes.append(f"writes refused by the {', '.join(refusing)} service's database, reads work")
    optional_down = [SHORT_NAMES.get(name, name) for name in down if name not in READINESS_SERVICES]
    if optional_down:
        notes.append(f"the {', '.join(optional_down)} service not serving (its operations answer 503)")
    return respond_message(request, "; ".join(notes))
