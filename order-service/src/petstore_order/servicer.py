"""OrderService RPCs: check the request, ask the pet service and the store, shape the response.

Errors are raised as petstore_common.errors exceptions; the shared server interceptor turns
them into gRPC statuses with their messages.
"""

from __future__ import annotations

from typing import Any

import grpc

from petstore.order.v1 import order_service_pb2, order_service_pb2_grpc
from petstore_common.errors import NotFound
from petstore_order import validation
from petstore_order.pets import PetDirectory
from petstore_order.storage.base import OrderStore

Context = grpc.aio.ServicerContext[Any, Any]


def pet_not_found(pet_id: int) -> str:
    return f"pet {pet_id} not found"


class OrderServicer(order_service_pb2_grpc.OrderServiceServicer):
    def __init__(self, store: OrderStore, pets: PetDirectory) -> None:
        self._store = store
        self._pets = pets

    async def CreateOrder(
        self, request: order_service_pb2.CreateOrderRequest, context: Context
    ) -> order_service_pb2.CreateOrderResponse:
        order = validation.new_order(request.order)
        # Checked once, not locked: a pet deleted right after keeps its orders (no
        # transaction spans two services' databases).
        if not await self._pets.exists(order.pet_id, budget_seconds=context.time_remaining()):
            raise NotFound(pet_not_found(order.pet_id))
        return order_service_pb2.CreateOrderResponse(order=await self._store.create(order))

    async def GetOrder(
        self, request: order_service_pb2.GetOrderRequest, context: Context
    ) -> order_service_pb2.GetOrderResponse:
        order = await self._store.get(validation.check_id(request.id))
        return order_service_pb2.GetOrderResponse(order=order)

    async def DeleteOrder(
        self, request: order_service_pb2.DeleteOrderRequest, context: Context
    ) -> order_service_pb2.DeleteOrderResponse:
        await self._store.delete(validation.check_id(request.id))
        return order_service_pb2.DeleteOrderResponse()
