"""OrderService RPCs: check the request, ask the pet service and the store, shape the response.

Errors are raised as petstore_common.errors exceptions; the shared server interceptor turns
them into gRPC statuses with their messages. Every request has passed its field rules (the
protos' annotations: ids, quantity, statuses) in that interceptor before a method here runs.

An order moves placed -> approved -> delivered, by staff only; a customer's new order is
placed and not complete, and a customer may cancel (delete) its order only while it is placed.
A customer's new order gets an id the store draws: the one it sends is ignored.

Who may see an order is decided here: staff see every order; a customer sees only the orders it
placed, and another customer's order is NOT_FOUND with the same message as an absent one, so a
guessed id tells nothing (AIP-211). Anybody else is PERMISSION_DENIED. Lists follow the same
rule: a customer's list is its own orders, and asking for another owner's is PERMISSION_DENIED
(the customer is told it may not, rather than shown an empty list that looks like an answer).

ReadOrderEvents and AckOrderEvents are the webhook service's (storage.events): the caller gate
admits its issuer to these two methods only (the gateway's tokens may call any method by design;
it has no route to these).
"""

from __future__ import annotations

from typing import Any

import grpc

from petstore.auth.v1 import caller_pb2
from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore_common.callers import MOVE_ORDER_STAFF_ONLY, customer_id, is_staff, require_staff
from petstore_common.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from petstore_common.idempotency import DEFAULT_TTL_SECONDS, Idempotency, Reservation
from petstore_common.paging import decode_page_token, encode_page_token, filter_fingerprint, page_size
from petstore_order import validation
from petstore_order.defaults import DEFAULT_STATUS, apply_defaults
from petstore_order.sale import Sale
from petstore_order.storage.base import HIDDEN_STEPS, STATUS_NAMES, OrderStore, Status, StoredOrder, not_found

Context = grpc.aio.ServicerContext[Any, Any]

SIGN_IN_FIRST = "orders are for customers and staff: sign in first"
NEW_ORDER_FOR_CUSTOMERS = "a new order is placed and not complete: status and complete are set by staff"
STAFF_ONLY = MOVE_ORDER_STAFF_ONLY
OWN_ORDERS_ONLY = "a customer lists only its own orders"
PLACED = order_pb2.ORDER_STATUS_PLACED
APPROVED = order_pb2.ORDER_STATUS_APPROVED
DELIVERED = order_pb2.ORDER_STATUS_DELIVERED
NEXT_STATUS: dict[Status, Status] = {PLACED: APPROVED, APPROVED: DELIVERED}
"""The one move each status allows; delivered is the end."""
MAX_STATUS_ATTEMPTS = 3
OPEN: tuple[Status, ...] = (PLACED, APPROVED)
DEFAULT_MAX_OPEN_ORDERS = 20
OPEN_ORDERS_RETRY_AFTER_SECONDS = 60


class OrderServicer(order_service_pb2_grpc.OrderServiceServicer):
    def __init__(
        self,
        store: OrderStore,
        sale: Sale,
        *,
        idempotency_ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_open_orders: int = DEFAULT_MAX_OPEN_ORDERS,
    ) -> None:
        self._store = store
        self._sale = sale
        self._max_open_orders = max_open_orders
        self._idempotency = Idempotency(store.idempotency, ttl_seconds=idempotency_ttl_seconds)

    async def CreateOrder(
        self, request: order_service_pb2.CreateOrderRequest, context: Context
    ) -> order_service_pb2.CreateOrderResponse:
        owner = _owner_of_new_order(request.caller)
        order = validation.new_order(request.order)
        order.ClearField("owner_user_id")  # never the client's to choose
        if owner is not None:
            order.owner_user_id = owner
            # Only staff choose an order's id: a customer's would tell whose ids are taken.
            order.ClearField("id")
            if order.status != PLACED or order.complete:
                raise InvalidArgument(NEW_ORDER_FOR_CUSTOMERS)

        async def create(reservation: Reservation) -> order_service_pb2.CreateOrderResponse:
            if owner is not None:
                await self._check_open_orders(owner)
            stored = await self._sale.place(reservation, order, budget_seconds=context.time_remaining())
            return order_service_pb2.CreateOrderResponse(order=stored)

        return await self._idempotency.serve(
            _as_written(request), order_service_pb2.CreateOrderResponse, create
        )

    async def GetOrder(
        self, request: order_service_pb2.GetOrderRequest, context: Context
    ) -> order_service_pb2.GetOrderResponse:
        order = await self._visible_order(request.caller, request.id)
        return order_service_pb2.GetOrderResponse(order=order)

    async def DeleteOrder(
        self, request: order_service_pb2.DeleteOrderRequest, context: Context
    ) -> order_service_pb2.DeleteOrderResponse:
        stored = await self._visible_stored(request.caller, request.id)
        customer = customer_id(request.caller) is not None  # staff delete any order
        if customer and _status(stored.order) != PLACED:
            raise FailedPrecondition(_not_cancellable(stored.order))
        if not await self._sale.cancel(stored):
            current = await self._store.get(stored.order.id)  # NotFound when it went meanwhile
            if customer and _status(current) != PLACED:
                raise FailedPrecondition(_not_cancellable(current))
            raise Aborted(f"order {current.id} is changing; retry")
        return order_service_pb2.DeleteOrderResponse(order=stored.order)

    async def UpdateOrderStatus(
        self, request: order_service_pb2.UpdateOrderStatusRequest, context: Context
    ) -> order_service_pb2.UpdateOrderStatusResponse:
        require_staff(request.caller, STAFF_ONLY)
        order_id = request.id
        target = request.status
        for _ in range(MAX_STATUS_ATTEMPTS):
            stored = await self._store.get_stored(order_id)
            if stored.step in HIDDEN_STEPS:
                raise NotFound(not_found(order_id))
            current = _status(stored.order)
            if target == current:
                return order_service_pb2.UpdateOrderStatusResponse(order=stored.order)  # already there
            if NEXT_STATUS.get(current) != target:
                raise FailedPrecondition(_refused_move(order_id, current))
            moved = await self._sale.move(stored, target)
            if moved is not None:
                return order_service_pb2.UpdateOrderStatusResponse(order=moved)
        raise Aborted(f"order {order_id} kept changing; retry")

    async def ListOrders(
        self, request: order_service_pb2.ListOrdersRequest, context: Context
    ) -> order_service_pb2.ListOrdersResponse:
        owner = _owner_of_list(request)
        statuses = list(request.statuses)
        pet_id = request.pet_id if request.HasField("pet_id") else None
        size = page_size(request.page_size)
        fingerprint = filter_fingerprint(statuses, [pet_id or 0], [owner or 0])
        after_id = decode_page_token(request.page_token, fingerprint)
        # One extra order tells whether another page exists without a second query.
        orders = await self._store.find(
            statuses=statuses, pet_id=pet_id, owner_user_id=owner, after_id=after_id, limit=size + 1
        )
        next_token = encode_page_token(orders[size - 1].id, fingerprint) if len(orders) > size else ""
        return order_service_pb2.ListOrdersResponse(orders=orders[:size], next_page_token=next_token)

    async def ReadOrderEvents(
        self, request: order_service_pb2.ReadOrderEventsRequest, context: Context
    ) -> order_service_pb2.ReadOrderEventsResponse:
        events = await self._store.read_events(limit=page_size(request.page_size))
        return order_service_pb2.ReadOrderEventsResponse(events=events)

    async def AckOrderEvents(
        self, request: order_service_pb2.AckOrderEventsRequest, context: Context
    ) -> order_service_pb2.AckOrderEventsResponse:
        for ack in request.acks:  # at most 1,000 (the request's field rules)
            await self._store.ack_events(ack.order_id, ack.through_sequence)
        return order_service_pb2.AckOrderEventsResponse()

    async def _check_open_orders(self, owner: int) -> None:
        """A customer holds at most `max_open_orders` placed or approved orders (each holding a
        pet): one account cannot reserve the whole catalogue. Checked before the order is
        stored, not locked: racing orders of one customer may pass it together, a few over."""
        if not self._max_open_orders:
            return
        open_orders = await self._store.find(
            statuses=OPEN, pet_id=None, owner_user_id=owner, after_id=0, limit=self._max_open_orders
        )
        if len(open_orders) >= self._max_open_orders:
            raise ResourceExhausted(
                f"a customer may have at most {self._max_open_orders} open (placed or approved) orders: "
                "cancel one, or wait for one to be delivered",
                retry_after_seconds=OPEN_ORDERS_RETRY_AFTER_SECONDS,
            )

    async def _visible_order(self, caller: caller_pb2.Caller, order_id: int) -> order_pb2.Order:
        """The order when this caller may see it; NotFound, exactly as for an absent order, when
        it belongs to somebody else."""
        return (await self._visible_stored(caller, order_id)).order

    async def _visible_stored(self, caller: caller_pb2.Caller, order_id: int) -> StoredOrder:
        customer = customer_id(caller)
        if customer is None and not is_staff(caller):
            raise PermissionDenied(SIGN_IN_FIRST)
        stored = await self._store.get_stored(order_id)
        if stored.step in HIDDEN_STEPS or (customer is not None and stored.order.owner_user_id != customer):
            raise NotFound(not_found(order_id))
        return stored


def _status(order: order_pb2.Order) -> Status:
    """An order stored without a status was placed (the default since the first version)."""
    return order.status or DEFAULT_STATUS


def _as_written(request: order_service_pb2.CreateOrderRequest) -> order_service_pb2.CreateOrderRequest:
    """The request with its order's defaults filled in: what its Idempotency-Key fingerprint is
    taken of, so that leaving a field out and sending its default are the same request. A
    retry may reach us through a gateway of another release (one fills the defaults, a later
    one may not); both must replay, not conflict."""
    written = order_service_pb2.CreateOrderRequest()
    written.CopyFrom(request)
    if written.HasField("order"):
        apply_defaults(written.order)
    return written


def _not_cancellable(order: order_pb2.Order) -> str:
    return f"order {order.id} is {STATUS_NAMES[_status(order)]}: only a placed order can be cancelled"


def _refused_move(order_id: int, current: Status) -> str:
    following = NEXT_STATUS.get(current)
    if following is None:
        return f"order {order_id} is {STATUS_NAMES[current]}: it cannot move on"
    return f"order {order_id} is {STATUS_NAMES[current]}: it can move to {STATUS_NAMES[following]} only"


def _owner_of_new_order(caller: caller_pb2.Caller) -> int | None:
    """A customer owns the orders it places; staff orders belong to nobody."""
    customer = customer_id(caller)
    if customer is None and not is_staff(caller):
        raise PermissionDenied(SIGN_IN_FIRST)
    return customer


def _owner_of_list(request: order_service_pb2.ListOrdersRequest) -> int | None:
    """Whose orders a list may show: a customer's own, whatever it asked; for staff, the owner
    asked for, or everybody's (None)."""
    customer = customer_id(request.caller)
    asked = request.owner_user_id if request.HasField("owner_user_id") else None
    if customer is not None:
        if asked is not None and asked != customer:
            raise PermissionDenied(OWN_ORDERS_ONLY)
        return customer
    if not is_staff(request.caller):
        raise PermissionDenied(SIGN_IN_FIRST)
    return asked
