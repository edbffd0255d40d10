"""OrderService RPCs: check the request, ask the pet service and the store, shape the response.

Errors are raised as petstore_common.errors exceptions; the shared server interceptor turns
them into gRPC statuses with their messages.

Who may see an order is decided here: staff see every order; a customer sees only the orders it
placed, and another customer's order is NOT_FOUND with the same message as an absent one, so a
guessed id tells nothing (AIP-211). Anybody else is PERMISSION_DENIED.
"""

from __future__ import annotations

from typing import Any

import grpc

from petstore.auth.v1 import caller_pb2
from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore_common.callers import customer_id, is_staff
from petstore_common.errors import NotFound, PermissionDenied
from petstore_order import validation
from petstore_order.pets import PetDirectory
from petstore_order.storage.base import OrderStore, not_found

Context = grpc.aio.ServicerContext[Any, Any]

SIGN_IN_FIRST = "orders are for customers and staff: sign in first"


def pet_not_found(pet_id: int) -> str:
    return f"pet {pet_id} not found"


class OrderServicer(order_service_pb2_grpc.OrderServiceServicer):
    def __init__(self, store: OrderStore, pets: PetDirectory) -> None:
        self._store = store
        self._pets = pets

    async def CreateOrder(
        self, request: order_service_pb2.CreateOrderRequest, context: Context
    ) -> order_service_pb2.CreateOrderResponse:
        owner = _owner_of_new_order(request.caller)
        order = validation.new_order(request.order)
        order.ClearField("owner_user_id")  # never the client's to choose
        if owner is not None:
            order.owner_user_id = owner
        # Checked once, not locked: a pet deleted right after keeps its orders (no
        # transaction spans two services' databases).
        if not await self._pets.exists(order.pet_id, budget_seconds=context.time_remaining()):
            raise NotFound(pet_not_found(order.pet_id))
        return order_service_pb2.CreateOrderResponse(order=await self._store.create(order))

    async def GetOrder(
        self, request: order_service_pb2.GetOrderRequest, context: Context
    ) -> order_service_pb2.GetOrderResponse:
        order = await self._visible_order(request.caller, request.id)
        return order_service_pb2.GetOrderResponse(order=order)

    async def DeleteOrder(
        self, request: order_service_pb2.DeleteOrderRequest, context: Context
    ) -> order_service_pb2.DeleteOrderResponse:
        order = await self._visible_order(request.caller, request.id)
        await self._store.delete(order.id)
        return order_service_pb2.DeleteOrderResponse()

    async def _visible_order(self, caller: caller_pb2.Caller, order_id: int) -> order_pb2.Order:
        """The order when this caller may see it; NotFound, exactly as for an absent order, when
        it belongs to somebody else."""
        customer = customer_id(caller)
        if customer is None and not is_staff(caller):
            raise PermissionDenied(SIGN_IN_FIRST)
        order = await self._store.get(validation.check_id(order_id))
        if customer is not None and order.owner_user_id != customer:
            raise NotFound(not_found(order.id))
        return order


def _owner_of_new_order(caller: caller_pb2.Caller) -> int | None:
    """A customer owns the orders it places; staff orders belong to nobody."""
    customer = customer_id(caller)
    if customer is None and not is_staff(caller):
        raise PermissionDenied(SIGN_IN_FIRST)
    return customer
