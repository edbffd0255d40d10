"""Webhook endpoints, forwarded to the webhook service (staff only); their declarations at the end.

The webhook service decides what an endpoint may be (https, a public address, known event
types, how many endpoints): the gateway reads the body, checks who asks, and shows the
service's refusal to the client in its words (rpc.py, violations.py).
"""

from __future__ import annotations

from aiohttp import web

from petstore.webhook.v1 import webhook_service_pb2
from petstore_common.paging import MAX_PAGE_SIZE
from petstore_gateway.apidoc.schemas import (
    INVALID_ID,
    STAFF_ONLY_NOTE,
    WEBHOOK_ID,
    body_parameter,
    ok,
    ok_message,
    ref,
)
from petstore_gateway.bodies import read_body, respond, respond_message
from petstore_gateway.keys import CLIENTS, PRINCIPAL
from petstore_gateway.operations import BODY_MEDIA_TYPES, Access, Json, Operation
from petstore_gateway.params import LIMIT_PARAM, parse_id, parse_limit
from petstore_gateway.representations.webhook import (
    DELIVERIES,
    EVENT_TYPES,
    MAX_EVENT_TYPES,
    WEBHOOK,
    WEBHOOKS,
    deliveries_to_wire,
    new_webhook_from_wire,
    webhook_to_wire,
    webhooks_to_wire,
)
from petstore_gateway.rpc import call

SERVICE = "webhook"
WEBHOOKS_STAFF_ONLY = "only staff may manage webhooks"
"""What a customer or anonymous caller is told (the gateway refuses before it reads a body)."""
WEBHOOK_PATH = "/webhooks/{webhookId}"
WEBHOOK_NOT_FOUND = "No webhook endpoint with this id"


def _webhook_id(request: web.Request) -> int:
    return parse_id(request.match_info["webhookId"], "webhookId")


async def create_webhook(request: web.Request) -> web.Response:
    url, event_types = await read_body(request, WEBHOOK, new_webhook_from_wire)
    reply = await call(
        request,
        request.config_dict[CLIENTS].webhook.CreateEndpoint,
        webhook_service_pb2.CreateEndpointRequest(
            url=url, event_types=event_types, caller=request[PRINCIPAL].caller()
        ),
        service=SERVICE,
    )
    return respond(request, webhook_to_wire(reply.endpoint, secret=reply.secret), WEBHOOK)


async def list_webhooks(request: web.Request) -> web.Response:
    reply = await call(
        request,
        request.config_dict[CLIENTS].webhook.ListEndpoints,
        webhook_service_pb2.ListEndpointsRequest(caller=request[PRINCIPAL].caller()),
        service=SERVICE,
    )
    return respond(request, webhooks_to_wire(reply.endpoints), WEBHOOKS)


async def delete_webhook(request: web.Request) -> web.Response:
    webhook_id = _webhook_id(request)
    await call(
        request,
        request.config_dict[CLIENTS].webhook.DeleteEndpoint,
        webhook_service_pb2.DeleteEndpointRequest(id=webhook_id, caller=request[PRINCIPAL].caller()),
        service=SERVICE,
    )
    return respond_message(request, str(webhook_id))


async def list_deliveries(request: web.Request) -> web.Response:
    webhook_id = _webhook_id(request)
    raw_limit = request.query.get(LIMIT_PARAM)
    # Left out (or empty): 0, the webhook service's own default; given: the API's limit rule,
    # which the service may cap further.
    page_size = parse_limit(raw_limit) if raw_limit else 0
    reply = await call(
        request,
        request.config_dict[CLIENTS].webhook.ListDeliveries,
        webhook_service_pb2.ListDeliveriesRequest(
            endpoint_id=webhook_id, page_size=page_size, caller=request[PRINCIPAL].caller()
        ),
        service=SERVICE,
    )
    return respond(request, deliveries_to_wire(reply.attempts), DELIVERIES)


LIMIT: Json = {
    "name": LIMIT_PARAM,
    "in": "query",
    "description": "Most attempts to return, newest first (left out: the webhook service's "
    "default; it may answer fewer than asked)",
    "required": False,
    "type": "integer",
    "format": "int32",
    "minimum": 1,
    "maximum": MAX_PAGE_SIZE,
}


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        method="POST",
        path="/webhooks",
        operation_id="createWebhook",
        tag="webhook",
        summary="Register a webhook endpoint",
        handler=create_webhook,
        access=Access.STAFF,
        staff_refusal=WEBHOOKS_STAFF_ONLY,
        consumes=BODY_MEDIA_TYPES,
        success=ok(
            "successful operation: the endpoint as registered, with its signing secret (shown this once)",
            ref("Webhook"),
        ),
        errors={
            400: "Malformed body, or a url or eventTypes the webhook service refuses (not https, a "
            "private address, an unknown event type; the message names the field)",
            429: "Too many requests from this client, a service at capacity, or the webhook service "
            "holds its most endpoints (delete one first): retry later",
        },
        parameters=(body_parameter(ref("NewWebhook"), "Where to send which events"),),
        description=f"{STAFF_ONLY_NOTE} Every event of the types asked for ({', '.join(EVENT_TYPES)}; at "
        f"most {MAX_EVENT_TYPES}) is POSTed to the url, signed with the secret (Standard Webhooks "
        "headers webhook-id, webhook-timestamp, webhook-signature), at least once, each order's "
        "and each pet's events in order. Not idempotent: a retry may register a second endpoint.",
    ),
    Operation(
        method="GET",
        path="/webhooks",
        operation_id="listWebhooks",
        tag="webhook",
        summary="List the webhook endpoints",
        handler=list_webhooks,
        access=Access.STAFF,
        staff_refusal=WEBHOOKS_STAFF_ONLY,
        success=ok(
            "successful operation: every endpoint, by id, without secrets",
            {"type": "array", "items": ref("Webhook"), "xml": {"name": WEBHOOKS.root_tag, "wrapped": True}},
        ),
        description=STAFF_ONLY_NOTE,
    ),
    Operation(
        method="DELETE",
        path=WEBHOOK_PATH,
        operation_id="deleteWebhook",
        tag="webhook",
        summary="Remove a webhook endpoint and its deliveries",
        handler=delete_webhook,
        access=Access.STAFF,
        staff_refusal=WEBHOOKS_STAFF_ONLY,
        success=ok_message("the endpoint's id as message"),
        errors={400: INVALID_ID, 404: WEBHOOK_NOT_FOUND},
        parameters=(WEBHOOK_ID,),
        description=STAFF_ONLY_NOTE,
    ),
    Operation(
        method="GET",
        path=WEBHOOK_PATH + "/deliveries",
        operation_id="listWebhookDeliveries",
        tag="webhook",
        summary="The endpoint's most recent delivery attempts, newest first",
        handler=list_deliveries,
        access=Access.STAFF,
        staff_refusal=WEBHOOKS_STAFF_ONLY,
        success=ok(
            "successful operation",
            {
                "type": "array",
                "items": ref("WebhookDelivery"),
                "xml": {"name": DELIVERIES.root_tag, "wrapped": True},
            },
        ),
        errors={400: "Invalid ID or limit", 404: WEBHOOK_NOT_FOUND},
        parameters=(WEBHOOK_ID, LIMIT),
        description=STAFF_ONLY_NOTE,
    ),
)
