"""The gRPC stubs of the services, on channels opened and closed with the application; every
call on them carries a caller token the gateway signs (petstore_common.caller_tokens).

The pet, order and user services are the shop: the gateway is ready only while they serve.
The webhook service only manages webhooks (/v2/webhooks): the gateway is ready without it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from petstore.order.v1 import order_service_pb2, order_service_pb2_grpc
from petstore.pet.v1 import pet_service_pb2, pet_service_pb2_grpc
from petstore.user.v1 import user_service_pb2, user_service_pb2_grpc
from petstore.webhook.v1 import webhook_service_pb2, webhook_service_pb2_grpc
from petstore_common.caller_tokens import CallerSigner
from petstore_common.grpc_client import create_channel

if TYPE_CHECKING:
    from petstore.order.v1.order_service_pb2_grpc import OrderServiceAsyncStub
    from petstore.pet.v1.pet_service_pb2_grpc import PetServiceAsyncStub
    from petstore.user.v1.user_service_pb2_grpc import UserServiceAsyncStub
    from petstore.webhook.v1.webhook_service_pb2_grpc import WebhookServiceAsyncStub

PET = pet_service_pb2.DESCRIPTOR.services_by_name["PetService"]
ORDER = order_service_pb2.DESCRIPTOR.services_by_name["OrderService"]
USER = user_service_pb2.DESCRIPTOR.services_by_name["UserService"]
WEBHOOK = webhook_service_pb2.DESCRIPTOR.services_by_name["WebhookService"]
PET_SERVICE, ORDER_SERVICE, USER_SERVICE = PET.full_name, ORDER.full_name, USER.full_name
WEBHOOK_SERVICE = WEBHOOK.full_name
SHORT_NAMES = {PET_SERVICE: "pet", ORDER_SERVICE: "order", USER_SERVICE: "user", WEBHOOK_SERVICE: "webhook"}
READINESS_SERVICES = (PET_SERVICE, ORDER_SERVICE, USER_SERVICE)
"""The services the gateway is ready only with (/readyz): the shop's. The others' health is
reported, never waited for."""


@dataclass(frozen=True, slots=True)
class ServiceClients:
    pet: PetServiceAsyncStub
    order: OrderServiceAsyncStub
    user: UserServiceAsyncStub
    webhook: WebhookServiceAsyncStub
    channels: dict[str, grpc.aio.Channel]
    """Channel per full gRPC service name, for health checks."""

    @classmethod
    def connect(
        cls, *, pet_addr: str, order_addr: str, user_addr: str, webhook_addr: str, signer: CallerSigner
    ) -> ServiceClients:
        """Channels connect lazily, so this never blocks and never fails on a service that is down.
        `signer` signs each call's caller token (for the request's own caller)."""
        pet, order, user, webhook = (
            create_channel(addr, (service,), signer=signer)
            for addr, service in (
                (pet_addr, PET),
                (order_addr, ORDER),
                (user_addr, USER),
                (webhook_addr, WEBHOOK),
            )
        )
        return cls(
            pet=pet_service_pb2_grpc.PetServiceStub(pet),
            order=order_service_pb2_grpc.OrderServiceStub(order),
            user=user_service_pb2_grpc.UserServiceStub(user),
            webhook=webhook_service_pb2_grpc.WebhookServiceStub(webhook),
            channels={PET_SERVICE: pet, ORDER_SERVICE: order, USER_SERVICE: user, WEBHOOK_SERVICE: webhook},
        )

    async def close(self, grace: float | None = None) -> None:
        await asyncio.gather(*(channel.close(grace) for channel in self.channels.values()))


@asynccontextmanager
async def open_clients(
    *, pet_addr: str, order_addr: str, user_addr: str, webhook_addr: str, signer: CallerSigner
) -> AsyncIterator[ServiceClients]:
    clients = ServiceClients.connect(
        pet_addr=pet_addr,
        order_addr=order_addr,
        user_addr=user_addr,
        webhook_addr=webhook_addr,
        signer=signer,
    )
    try:
        yield clients
    finally:
        await clients.close()
