"""/v2/store: the inventory (from the pet service) and orders (the order service)."""

from __future__ import annotations

from aiohttp import web

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore.user.v1 import user_service_pb2
from petstore_gateway.bodies import read_body, respond, respond_message
from petstore_gateway.errors import ApiError
from petstore_gateway.idempotency import KEY_REUSED_IS_422, idempotency_key, replay_headers
from petstore_gateway.keys import CLIENTS, PRINCIPAL
from petstore_gateway.params import next_page_headers, page_request, parse_id, query_values
from petstore_gateway.representations.inventory import INVENTORY, inventory_to_wire
from petstore_gateway.representations.order import (
    ORDER,
    ORDERS,
    order_from_wire,
    order_status_from_wire,
    order_to_wire,
    orders_to_wire,
    parse_order_status,
)
from petstore_gateway.representations.shapes import InvalidRepresentation
from petstore_gateway.rpc import call

SERVICE = "order"

routes = web.RouteTableDef()


@routes.get("/v2/store/inventory")
async def get_inventory(request: web.Request) -> web.Response:
    reply = await call(
        request, request.app[CLIENTS].pet.GetInventory, pet_service_pb2.GetInventoryRequest(), service="pet"
    )
    return respond(request, inventory_to_wire(reply.counts), INVENTORY)


@routes.post("/v2/store/order")
async def place_order(request: web.Request) -> web.Response:
    key = idempotency_key(request)
    order = await read_body(request, ORDER, order_from_wire)
    reply = await call(
        request,
        request.app[CLIENTS].order.CreateOrder,
        order_service_pb2.CreateOrderRequest(
            order=order, caller=request[PRINCIPAL].caller(), idempotency_key=key
        ),
        service=SERVICE,
        overrides=KEY_REUSED_IS_422,
    )
    return respond(
        request, order_to_wire(reply.order), ORDER, headers=replay_headers(reply.idempotent_replay)
    )


@routes.get("/v2/store/order")
async def list_orders(request: web.Request) -> web.Response:
    """Orders in id order, a page at a time. Which orders the caller may see is the order
    service's to decide: the gateway only turns a username into the user id it stands for."""
    query = order_service_pb2.ListOrdersRequest(caller=request[PRINCIPAL].caller())
    try:
        query.statuses.extend(parse_order_status(name) for name in query_values(request.query, "status"))
    except InvalidRepresentation as exc:
        raise ApiError(400, str(exc)) from None
    pet_id = request.query.get("petId")
    if pet_id is not None:
        query.pet_id = parse_id(pet_id, "petId")
    username = request.query.get("username")
    if username is not None:
        query.owner_user_id = await _user_id(request, username)
    query.page_size, query.page_token = page_request(request.query)
    reply = await call(request, request.app[CLIENTS].order.ListOrders, query, service=SERVICE)
    return respond(
        request, orders_to_wire(reply.orders), ORDERS, headers=next_page_headers(reply.next_page_token)
    )


async def _user_id(request: web.Request, username: str) -> int:
    """The id of the user with this name (anyone may read it: it is in the public view); 404
    when there is none."""
    if not username:
        raise ApiError(400, "username must not be empty")
    reply = await call(
        request,
        request.app[CLIENTS].user.GetUser,
        user_service_pb2.GetUserRequest(username=username, caller=request[PRINCIPAL].caller()),
        service="user",
    )
    return reply.user.id


@routes.put("/v2/store/order/{orderId}")
async def update_order_status(request: web.Request) -> web.Response:
    """Staff move an order on; the body is an Order, of which only status (and id) are read."""
    order_id = parse_id(request.match_info["orderId"], "orderId")
    body_id, status = await read_body(request, ORDER, order_status_from_wire)
    if body_id is not None and body_id != order_id:
        raise ApiError(400, f"the body's id {body_id} is not the orderId {order_id} of the path")
    reply = await call(
        request,
        request.app[CLIENTS].order.UpdateOrderStatus,
        order_service_pb2.UpdateOrderStatusRequest(
            id=order_id, status=status, caller=request[PRINCIPAL].caller()
        ),
        service=SERVICE,
    )
    return respond(request, order_to_wire(reply.order), ORDER)


@routes.get("/v2/store/order/{orderId}")
async def get_order(request: web.Request) -> web.Response:
    order_id = parse_id(request.match_info["orderId"], "orderId")
    reply = await call(
        request,
        request.app[CLIENTS].order.GetOrder,
        order_service_pb2.GetOrderRequest(id=order_id, caller=request[PRINCIPAL].caller()),
        service=SERVICE,
    )
    return respond(request, order_to_wire(reply.order), ORDER)


@routes.delete("/v2/store/order/{orderId}")
async def delete_order(request: web.Request) -> web.Response:
    order_id = parse_id(request.match_info["orderId"], "orderId")
    await call(
        request,
        request.app[CLIENTS].order.DeleteOrder,
        order_service_pb2.DeleteOrderRequest(id=order_id, caller=request[PRINCIPAL].caller()),
        service=SERVICE,
    )
    return respond_message(request, str(order_id))
