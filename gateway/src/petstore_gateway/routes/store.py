"""The inventory (from the pet service) and orders (the order service); their declarations at the end."""

from __future__ import annotations

from aiohttp import web

from petstore.order.v1 import order_service_pb2
from petstore.pet.v1 import pet_service_pb2
from petstore.user.v1 import user_service_pb2
from petstore_common.callers import MOVE_ORDER_STAFF_ONLY
from petstore_gateway.apidoc.schemas import (
    INVALID_ID,
    NOT_YOURS,
    ORDER_ID,
    ORDER_NOT_FOUND,
    ORDERS_NOTE,
    ORDERS_RESPONSE,
    USERNAME_PATTERN,
    USERNAME_RULES,
    body_parameter,
    min_length,
    minimum,
    ok,
    ok_message,
    paging,
    ref,
)
from petstore_gateway.bodies import read_body, respond, respond_message
from petstore_gateway.errors import ApiError
from petstore_gateway.idempotency import idempotency_key, replay_headers
from petstore_gateway.keys import CLIENTS, PET_CACHE, PRINCIPAL
from petstore_gateway.operations import BODY_MEDIA_TYPES, Access, Operation
from petstore_gateway.params import next_page_headers, page_request, parse_id, query_values
from petstore_gateway.representations.inventory import INVENTORY, inventory_to_wire
from petstore_gateway.representations.order import (
    ORDER,
    ORDER_STATUSES,
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


async def get_inventory(request: web.Request) -> web.Response:
    reply = await call(
        request,
        request.config_dict[CLIENTS].pet.GetInventory,
        pet_service_pb2.GetInventoryRequest(),
        service="pet",
    )
    return respond(request, inventory_to_wire(reply.counts), INVENTORY)


async def place_order(request: web.Request) -> web.Response:
    key = idempotency_key(request)
    order = await read_body(request, ORDER, order_from_wire)
    try:
        reply = await call(
            request,
            request.config_dict[CLIENTS].order.CreateOrder,
            order_service_pb2.CreateOrderRequest(
                order=order, caller=request[PRINCIPAL].caller(), idempotency_key=key
            ),
            service=SERVICE,
        )
    finally:  # whatever the answer (an outage may hide a reservation): read-your-writes
        pet_moved(request, order.pet_id)
    return respond(
        request, order_to_wire(reply.order), ORDER, headers=replay_headers(reply.idempotent_replay)
    )


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
    reply = await call(request, request.config_dict[CLIENTS].order.ListOrders, query, service=SERVICE)
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
        request.config_dict[CLIENTS].user.GetUser,
        user_service_pb2.GetUserRequest(username=username, caller=request[PRINCIPAL].caller()),
        service="user",
    )
    return reply.user.id


async def update_order_status(request: web.Request) -> web.Response:
    """Staff move an order on; the body is an Order, of which only status (and id) are read."""
    order_id = parse_id(request.match_info["orderId"], "orderId")
    body_id, status = await read_body(request, ORDER, order_status_from_wire)
    if body_id is not None and body_id != order_id:
        raise ApiError(400, f"the body's id {body_id} is not the orderId {order_id} of the path")
    reply = await call(
        request,
        request.config_dict[CLIENTS].order.UpdateOrderStatus,
        order_service_pb2.UpdateOrderStatusRequest(
            id=order_id, status=status, caller=request[PRINCIPAL].caller()
        ),
        service=SERVICE,
    )
    pet_moved(request, reply.order.pet_id)  # delivered: sold
    return respond(request, order_to_wire(reply.order), ORDER)


async def get_order(request: web.Request) -> web.Response:
    order_id = parse_id(request.match_info["orderId"], "orderId")
    reply = await call(
        request,
        request.config_dict[CLIENTS].order.GetOrder,
        order_service_pb2.GetOrderRequest(id=order_id, caller=request[PRINCIPAL].caller()),
        service=SERVICE,
    )
    return respond(request, order_to_wire(reply.order), ORDER)


async def delete_order(request: web.Request) -> web.Response:
    order_id = parse_id(request.match_info["orderId"], "orderId")
    reply = await call(
        request,
        request.config_dict[CLIENTS].order.DeleteOrder,
        order_service_pb2.DeleteOrderRequest(id=order_id, caller=request[PRINCIPAL].caller()),
        service=SERVICE,
    )
    pet_moved(request, reply.order.pet_id)  # released
    return respond_message(request, str(order_id))


def pet_moved(request: web.Request, pet_id: int) -> None:
    """An order's sale may have changed its pet (docs/sale.md): this gateway process drops its
    cached pet before it answers, so the client reads its own writes; others follow the watch.
    (0: unknown, from an order service of an earlier release.)"""
    if pet_id:
        request.config_dict[PET_CACHE].written(pet_id)


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        method="GET",
        path="/store/inventory",
        operation_id="getInventory",
        tag="store",
        summary="Returns pet inventories by status",
        handler=get_inventory,
        access=Access.OPEN,
        success=ok("successful operation", ref("Inventory")),
    ),
    Operation(
        method="POST",
        path="/store/order",
        operation_id="placeOrder",
        tag="store",
        summary="Place an order for a pet",
        handler=place_order,
        access=Access.REQUIRED,
        consumes=BODY_MEDIA_TYPES,
        idempotent=True,
        success=ok("successful operation: the stored order", ref("Order")),
        errors={
            400: "Invalid Order",
            404: "No pet with this petId",
            409: "The pet is not available (another order holds it, or it is sold: the message names "
            "its status), or an order with this id exists",
        },
        parameters=(body_parameter(ref("Order"), "The order; the store picks the id when none is given"),),
        description="An order placed with a customer's session belongs to that customer; "
        "one placed with a static key belongs to no customer. A pet is sold once: the order "
        "reserves its pet (available, or without a status), which becomes pending; delivering the "
        "order makes it sold, and cancelling a placed or approved order makes it available again.",
    ),
    Operation(
        method="GET",
        path="/store/order",
        operation_id="listOrders",
        tag="store",
        summary="Lists orders: a customer's own, or any for staff",
        handler=list_orders,
        access=Access.REQUIRED,
        success=ORDERS_RESPONSE,
        errors={
            400: "Invalid status, petId, username, limit or pageToken",
            403: "A customer named another user as username",
            404: "No user has this username",
        },
        parameters=(
            {
                "name": "status",
                "in": "query",
                "description": "Only orders with any of these statuses (all when left out): repeat the "
                "parameter or separate values by commas (status[]=a and status[0]=a are read too)",
                "required": False,
                "type": "array",
                "items": {"type": "string", "enum": list(ORDER_STATUSES)},
                "collectionFormat": "multi",
            },
            {
                "name": "petId",
                "in": "query",
                "description": "Only orders of this pet",
                "required": False,
                "type": "integer",
                "format": "int64",
                "minimum": minimum(order_service_pb2.ListOrdersRequest, "pet_id"),
            },
            {
                "name": "username",
                "in": "query",
                "description": "Only orders this user placed (staff; a customer may name only itself)",
                "required": False,
                "type": "string",
                "minLength": min_length(USERNAME_RULES),
                "maxLength": USERNAME_RULES.string.max_len,
                "pattern": USERNAME_PATTERN,
            },
            *paging("orders", order_service_pb2.ListOrdersRequest),
        ),
        description="Orders in id order, a page at a time. A customer sees only its own orders and "
        "naming another user is 403; staff see every order, including those placed with a static key.",
    ),
    Operation(
        method="GET",
        path="/store/order/{orderId}",
        operation_id="getOrderById",
        tag="store",
        summary="Find purchase order by ID",
        handler=get_order,
        access=Access.REQUIRED,
        success=ok("successful operation", ref("Order")),
        errors={400: INVALID_ID, 404: NOT_YOURS},
        parameters=(ORDER_ID,),
        description=ORDERS_NOTE,
    ),
    Operation(
        method="DELETE",
        path="/store/order/{orderId}",
        operation_id="deleteOrder",
        tag="store",
        summary="Delete purchase order by ID",
        handler=delete_order,
        access=Access.REQUIRED,
        success=ok_message("the order's id as message"),
        errors={400: INVALID_ID, 404: NOT_YOURS},
        parameters=(ORDER_ID,),
        description=f"{ORDERS_NOTE} Deleting a placed or approved order makes its pet available "
        "again; a delivered order's pet stays sold.",
    ),
    Operation(
        method="PUT",
        path="/store/order/{orderId}",
        operation_id="updateOrderStatus",
        tag="store",
        summary="Move an order on: placed to approved, approved to delivered",
        handler=update_order_status,
        access=Access.STAFF,
        staff_refusal=MOVE_ORDER_STAFF_ONLY,
        consumes=BODY_MEDIA_TYPES,
        success=ok("successful operation: the order as stored", ref("Order")),
        errors={
            400: "Invalid ID, a body without a valid status, or a body id other than orderId",
            404: ORDER_NOT_FOUND,
            409: "The order cannot move to this status from where it is (the message names the next one)",
        },
        parameters=(
            ORDER_ID,
            body_parameter(ref("Order"), "An Order: only status is read (and id, which must be orderId)"),
        ),
        description="Staff only. delivered also completes the order and makes its pet sold; asking "
        "for the status the order already has changes nothing.",
    ),
)
