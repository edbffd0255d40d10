"""`python -m petstore_order` serves until SIGTERM, then stops cleanly; it asks the pet
service named by PET_SERVICE_ADDR."""

from __future__ import annotations

from petstore.order.v1 import order_pb2, order_service_pb2, order_service_pb2_grpc
from petstore_common import callers
from petstore_common.caller_gate import GATEWAY, ORDER_SERVICE
from petstore_common.caller_testing import KEYS, signed_channel, trusting_env
from petstore_devstack.service_process import service_process
from petstore_order.service import SERVICE_NAME

from .pet_backend import pet_backend

STAFF = callers.staff()


async def test_the_process_serves_and_stops_on_sigterm() -> None:
    async with pet_backend() as pets:
        pet_id = await pets.add_pet()
        env = {
            "MONGODB_URI": "",
            "GRACE_SECONDS": "1",
            "PET_SERVICE_ADDR": pets.address,
            "CALLER_SIGNING_KEY": KEYS[ORDER_SERVICE].seed,
            **trusting_env(GATEWAY),
        }
        async with service_process("petstore_order", SERVICE_NAME, env) as service:
            async with signed_channel(service.address) as channel:
                stub = order_service_pb2_grpc.OrderServiceStub(channel)
                reply = await stub.CreateOrder(
                    order_service_pb2.CreateOrderRequest(
                        caller=STAFF, order=order_pb2.Order(pet_id=pet_id, quantity=1)
                    ),
                    timeout=5,
                )
            assert (reply.order.id, reply.order.pet_id) == (1, pet_id)
            assert await service.stop() == (0, "stopped")
